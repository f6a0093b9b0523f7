package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The batch lookup, POST /<db> (DESIGN.md). The request body holds one
// key a line, each percent-encoded as in a key's path (KeyPath), so any
// byte can be sent; a final newline is allowed and a "\r" before a
// newline is dropped (an encoder escapes a key's own CR as %0D). Any
// other empty line is the empty key, which is invalid.
//
// The answer is JSON (BatchAnswer): one version for the whole answer,
// each key written exactly as the request wrote it. A partial failure is
// reported per key under "failed" and never fails the batch. A failed
// key's reason starts with the status a single GET of it would have had
// (FailStatus reads it back), so a client can tell what to retry:
//
//	"421 partition not held"  storaged only: this node does not hold the
//	                          key's partition; ask another replica
//	"410 ..."                 no replica holds the pinned version
//	"502 ...", "504 ..."      no replica reachable; all tried timed out
//	"503 ..."                 every replica shed load
//	"500 ..."                 the lookup failed on the node
//
// storaged answers 421 for the whole batch when it holds none of its
// keys' partitions, as for a single GET, so a router fails over at once;
// keys of partitions it does not hold in a batch that it partly serves
// are failed with ReasonNotHeld.
const (
	// ContentTypeJSON is the Content-Type of a batch answer.
	ContentTypeJSON = "application/json"
	// DefaultBatchMaxKeys and DefaultBatchMaxBytes are the default
	// limits of a batch request; above them the answer is 413.
	DefaultBatchMaxKeys  = 1000
	DefaultBatchMaxBytes = 1 << 20
	// ReasonNotHeld is storaged's reason for a key of a partition it
	// does not hold.
	ReasonNotHeld = "421 partition not held"
)

// Errors of ParseBatch and ReadBatch. ErrBatchTooLarge maps to 413, the
// others to 400.
var (
	ErrBatchTooLarge = errors.New("wire: batch over the limit")
	ErrBatchEmptyKey = errors.New("wire: empty key in batch")
	ErrBatchBadKey   = errors.New("wire: bad key in batch")
)

// BatchLimits bound a batch request. Zero values are the defaults.
type BatchLimits struct {
	MaxKeys  int
	MaxBytes int64
}

func (l BatchLimits) withDefaults() BatchLimits {
	if l.MaxKeys <= 0 {
		l.MaxKeys = DefaultBatchMaxKeys
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultBatchMaxBytes
	}
	return l
}

// BatchKey is one distinct key of a batch request.
type BatchKey struct {
	// Raw is the key as the request wrote it; the answer uses it.
	Raw string
	// Key is the unescaped key.
	Key string
}

// ReadBatch reads a batch request body from r (at most the size limit,
// ErrBatchTooLarge beyond) and parses it with ParseBatch.
func ReadBatch(r io.Reader, lim BatchLimits) ([]BatchKey, error) {
	lim = lim.withDefaults()
	body, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("wire: reading batch: %w", err)
	}
	if int64(len(body)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrBatchTooLarge, lim.MaxBytes)
	}
	return ParseBatch(body, lim)
}

// ParseBatch parses a batch request body into its distinct keys, in the
// order they first appear; a key written twice the same way is kept
// once. Errors name the line at fault.
func ParseBatch(body []byte, lim BatchLimits) ([]BatchKey, error) {
	lim = lim.withDefaults()
	if int64(len(body)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrBatchTooLarge, lim.MaxBytes)
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	if len(body) == 0 {
		return nil, nil
	}
	n := bytes.Count(body, []byte("\n")) + 1
	if n > lim.MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ErrBatchTooLarge, n, lim.MaxKeys)
	}
	keys := make([]BatchKey, 0, n)
	s := string(body)
	for line, more := 1, true; more; line++ {
		var raw string
		raw, s, more = strings.Cut(s, "\n")
		raw = strings.TrimSuffix(raw, "\r")
		if raw == "" {
			return nil, fmt.Errorf("%w (line %d)", ErrBatchEmptyKey, line)
		}
		if len(raw) > 3*MaxKeyLen {
			return nil, fmt.Errorf("%w: line %d: key too long", ErrBatchBadKey, line)
		}
		key, err := url.PathUnescape(raw)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: line %d: %v", ErrBatchBadKey, line, err)
		case key == "":
			return nil, fmt.Errorf("%w (line %d)", ErrBatchEmptyKey, line)
		case len(key) > MaxKeyLen:
			return nil, fmt.Errorf("%w: line %d: key too long", ErrBatchBadKey, line)
		}
		keys = append(keys, BatchKey{Raw: raw, Key: key})
	}
	return dropRepeats(keys), nil
}

// dropRepeats keeps the first of the keys written the same way, in
// order. Most batches repeat no line, which a set of the lines' 64-bit
// hashes (open addressing, on the stack for up to 128 lines) shows at a
// fraction of a map's cost (a map of every line was a tenth of
// storaged's CPU for a 100-key batch); a map sorts the lines out only
// when two hashes are equal.
func dropRepeats(keys []BatchKey) []BatchKey {
	if len(keys) < 2 {
		return keys
	}
	size := 256
	for size < 2*len(keys) {
		size *= 2
	}
	var small [256]uint64
	set := small[:]
	if size > len(small) {
		set = make([]uint64, size)
	}
	mask := uint64(size - 1)
	seed := maphash.MakeSeed()
	repeats := false
	for _, k := range keys {
		h := maphash.String(seed, k.Raw) | 1 // never 0, the empty slot
		i := h & mask
		for set[i] != 0 && set[i] != h {
			i = (i + 1) & mask
		}
		if set[i] == h {
			repeats = true
			break
		}
		set[i] = h
	}
	if !repeats {
		return keys
	}
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if _, dup := seen[k.Raw]; dup {
			continue
		}
		seen[k.Raw] = struct{}{}
		out = append(out, k)
	}
	return out
}

// AppendBatchKey appends key, escaped as url.PathEscape escapes it, and a
// newline to a batch request body, without allocating a string for it.
func AppendBatchKey(dst, key []byte) []byte {
	return append(AppendPathEscape(dst, key), '\n')
}

// AppendPathEscape appends key escaped as url.PathEscape escapes a path
// segment: unreserved bytes and "$&+:=@" as they are, any other as %XX
// (FuzzAppendPathEscape holds it to url.PathEscape).
func AppendPathEscape(dst, key []byte) []byte {
	for _, c := range key {
		if pathSafe(c) {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&0xf])
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// pathSafe reports whether url.PathEscape leaves c as it is.
func pathSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', ':', '=', '@':
		return true
	}
	return false
}

// BatchStatus maps an error of ParseBatch, ReadBatch or
// ReadBatchRequest to its status: 413 over a limit, 503 (the caller adds
// Retry-After) when the daemon holds too many batch bytes, 408 when the
// body did not arrive in time, 400 otherwise.
func BatchStatus(err error) int {
	switch {
	case errors.Is(err, ErrBatchTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBatchBusy):
		return StatusUnavailable
	case errors.Is(err, ErrBatchTimeout):
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}

// BatchAnswer is the JSON answer of a batch lookup. Keys are as the
// request wrote them; values are standard base64 in JSON.
type BatchAnswer struct {
	Version string            `json:"version"`
	Found   map[string][]byte `json:"found"`
	Missing []string          `json:"missing"`
	Failed  map[string]string `json:"failed"`
}

// NewBatchAnswer returns an empty answer for version, sized for n keys.
func NewBatchAnswer(version string, n int) *BatchAnswer {
	return &BatchAnswer{Version: version, Found: make(map[string][]byte, n), Missing: []string{}, Failed: map[string]string{}}
}

// Encode writes a as JSON, as encoding/json would but for the order of
// the keys (unsorted) and without escaping <, > and & (the answer is
// never HTML). Empty parts are written as {} and [], never null, so
// clients need not check. It is written by hand because it is on the
// batch lookup's path on both daemons: it takes a fraction of
// json.Marshal's time (BenchmarkBatchEncode).
func (a *BatchAnswer) Encode() ([]byte, error) {
	n := 64 + len(a.Version)
	for k, v := range a.Found {
		n += len(k) + 8 + base64.StdEncoding.EncodedLen(len(v))
	}
	for _, k := range a.Missing {
		n += len(k) + 4
	}
	for k, r := range a.Failed {
		n += len(k) + len(r) + 8
	}
	b := make([]byte, 0, n)
	b = append(b, `{"version":`...)
	b = AppendJSONString(b, a.Version)
	b = append(b, `,"found":{`...)
	first := true
	for k, v := range a.Found {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(AppendJSONString(b, k), ':', '"')
		b = append(AppendBase64(b, v), '"')
	}
	b = append(b, `},"missing":[`...)
	for i, k := range a.Missing {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
	}
	b = append(b, `],"failed":{`...)
	first = true
	for k, r := range a.Failed {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(AppendJSONString(b, k), ':')
		b = AppendJSONString(b, r)
	}
	return append(b, "}}\n"...), nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does; a key's bytes always travel escaped, as %XX).
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// DecodeBatchAnswer parses a batch answer.
func DecodeBatchAnswer(b []byte) (*BatchAnswer, error) {
	var a BatchAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("wire: decoding batch answer: %w", err)
	}
	return &a, nil
}

// FailReason is the reason of a failed key: the status a single GET of
// it would have had, then what happened.
func FailReason(status int, msg string) string {
	return strconv.Itoa(status) + " " + msg
}

// FailStatus reads the status back from a reason; 0 if it has none.
func FailStatus(reason string) int {
	if len(reason) < 3 {
		return 0
	}
	n, err := strconv.Atoi(reason[:3])
	if err != nil || n < 100 || (len(reason) > 3 && reason[3] != ' ') {
		return 0
	}
	return n
}
