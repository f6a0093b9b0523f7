package wire

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// The compact batch answer, between routerd and storaged only. An app
// always gets JSON (BatchAnswer); routerd asks storaged for this form
// with "Accept: application/x-spangle-batch" (BatchAccepts), and storaged
// answers in it only when asked, so a router that does not ask (an
// older routerd, curl, Envoy) gets JSON and a router that asks an older
// storaged gets JSON too and reads it as before: mixed versions keep
// working during an upgrade.
//
// The JSON answer names every key and carries values in base64, which
// routerd decoded with encoding/json (a map insert and a base64 decode a
// key). This one is positional: one entry for each distinct key of the
// request, in the order ParseBatch returns them (the order of their
// first line), so no key is repeated and values travel as they are:
//
//	uvarint len, version
//	uvarint n, the number of entries
//	n entries, each a kind byte, then for
//	  BatchFound  uvarint len, value
//	  BatchMissing nothing
//	  BatchFailed uvarint len, reason (as in BatchAnswer.Failed)
//
// Lengths are checked against the bytes left before anything is taken.

// ContentTypeBatchBinary is the media type of the compact batch answer.
const ContentTypeBatchBinary = "application/x-spangle-batch"

// BatchAccept is the Accept header routerd sends with a batch: the
// compact answer, JSON still acceptable.
const BatchAccept = ContentTypeBatchBinary + ", " + ContentTypeJSON + ";q=0.5"

// Kinds of a BatchEntry.
const (
	BatchFound   byte = 'f'
	BatchMissing byte = 'm'
	BatchFailed  byte = 'x'
)

// BatchEntry is what became of one key of a batch.
type BatchEntry struct {
	Kind byte
	// Value is a found key's value; Reason a failed key's reason.
	Value  []byte
	Reason string
}

// ErrBadBatchBinary is the error of a compact answer that does not parse.
var ErrBadBatchBinary = errors.New("wire: bad compact batch answer")

// BatchAccepts reports whether a batch request asked for the compact
// answer: ContentTypeBatchBinary named in an Accept header, with a
// quality above zero.
func BatchAccepts(h http.Header) bool {
	for _, v := range h["Accept"] {
		if v == BatchAccept {
			return true // routerd's, as it always writes it
		}
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != ContentTypeBatchBinary {
				continue
			}
			if q, ok := params["q"]; ok && strings.Trim(q, "0.") == "" {
				continue // q=0: not acceptable
			}
			return true
		}
	}
	return false
}

// AppendBatchBinaryHead starts a compact answer of n entries of version.
// The caller appends exactly n entries with AppendBatchFound,
// AppendBatchMissing and AppendBatchFailed.
func AppendBatchBinaryHead(dst []byte, version string, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(version)))
	dst = append(dst, version...)
	return binary.AppendUvarint(dst, uint64(n))
}

// AppendBatchFound appends a found key's entry.
func AppendBatchFound(dst, value []byte) []byte {
	dst = append(dst, BatchFound)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// AppendBatchMissing appends a missing key's entry.
func AppendBatchMissing(dst []byte) []byte { return append(dst, BatchMissing) }

// AppendBatchFailed appends a failed key's entry.
func AppendBatchFailed(dst []byte, reason string) []byte {
	dst = append(dst, BatchFailed)
	dst = binary.AppendUvarint(dst, uint64(len(reason)))
	return append(dst, reason...)
}

// DecodeBatchBinary parses a compact answer. Values are slices of b,
// not copies. It allocates the entries only once their count is known to
// fit in b (each entry takes at least one byte).
func DecodeBatchBinary(b []byte) (version string, entries []BatchEntry, err error) {
	take := func(what string) ([]byte, error) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, fmt.Errorf("%w: %s length", ErrBadBatchBinary, what)
		}
		out := b[w : w+int(n)]
		b = b[w+int(n):]
		return out, nil
	}
	v, err := take("version")
	if err != nil {
		return "", nil, err
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, fmt.Errorf("%w: entry count", ErrBadBatchBinary)
	}
	b = b[w:]
	entries = make([]BatchEntry, n)
	for i := range entries {
		if len(b) == 0 {
			return "", nil, fmt.Errorf("%w: %d of %d entries", ErrBadBatchBinary, i, n)
		}
		kind := b[0]
		b = b[1:]
		e := &entries[i]
		e.Kind = kind
		switch kind {
		case BatchFound:
			if e.Value, err = take("value"); err != nil {
				return "", nil, err
			}
		case BatchMissing:
		case BatchFailed:
			r, err := take("reason")
			if err != nil {
				return "", nil, err
			}
			e.Reason = string(r)
		default:
			return "", nil, fmt.Errorf("%w: entry %d of kind %#x", ErrBadBatchBinary, i, kind)
		}
	}
	if len(b) != 0 {
		return "", nil, fmt.Errorf("%w: %d bytes after the last entry", ErrBadBatchBinary, len(b))
	}
	return string(v), entries, nil
}

// AppendBatchJSON appends the JSON answer (as BatchAnswer.Encode writes
// it) of version whose keys[i] came to entries[i], without building
// BatchAnswer's maps: a router writes its answer straight from what it
// gathered. keys must be distinct, as the request wrote them; an entry
// of another kind than the three is left out.
func AppendBatchJSON(dst []byte, version string, keys []string, entries []BatchEntry) []byte {
	dst = append(dst, `{"version":`...)
	dst = AppendJSONString(dst, version)
	dst = append(dst, `,"found":{`...)
	first := true
	for i, e := range entries {
		if e.Kind != BatchFound {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(AppendJSONString(dst, keys[i]), ':', '"')
		dst = append(AppendBase64(dst, e.Value), '"')
	}
	dst = append(dst, `},"missing":[`...)
	first = true
	for i, e := range entries {
		if e.Kind != BatchMissing {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = AppendJSONString(dst, keys[i])
	}
	dst = append(dst, `],"failed":{`...)
	first = true
	for i, e := range entries {
		if e.Kind != BatchFailed {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(AppendJSONString(dst, keys[i]), ':')
		dst = AppendJSONString(dst, e.Reason)
	}
	return append(dst, "}}\n"...)
}

// BatchJSONSize is about the bytes AppendBatchJSON writes, to size its
// buffer once.
func BatchJSONSize(version string, keys []string, entries []BatchEntry) int {
	n := 64 + len(version)
	for i, e := range entries {
		n += len(keys[i]) + 8 + base64.StdEncoding.EncodedLen(len(e.Value)) + len(e.Reason)
	}
	return n
}
