package wire

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Reading a batch body off the network. A batch body arrives at the
// client's pace, so a slow or stalled client could otherwise hold its
// connection, the bytes it has sent so far, and (on storaged) a slot of
// max_inflight for as long as it likes. ReadBatchRequest bounds all
// three: the whole body must arrive within a deadline, the bytes of the
// bodies a daemon is reading at once are bounded by one BatchBudget, and
// the caller takes its in-flight slot only once the body is read.

// Defaults of the two bounds on batch bodies being read.
const (
	// DefaultBatchReadTimeout is how long a batch body may take to
	// arrive, from the moment its handler starts reading it.
	DefaultBatchReadTimeout = 5 * time.Second
	// DefaultBatchReadBytes bounds the bytes of batch bodies a daemon
	// holds at once: 64 bodies of the default batch_max_bytes. It must
	// be at least twice the largest body (see readBody), so that one
	// body of any allowed size can be read.
	DefaultBatchReadBytes = 64 << 20
)

// Errors of ReadBatchRequest besides those of ParseBatch. BatchStatus
// maps ErrBatchBusy to 503 (with Retry-After) and ErrBatchTimeout to
// 408.
var (
	ErrBatchBusy    = errors.New("wire: too many batch bytes being read at once")
	ErrBatchTimeout = errors.New("wire: batch body not received in time")
)

// batchGrowStart is the first buffer of a body sent without a
// Content-Length (chunked); it doubles, each step reserved first.
const batchGrowStart = 4 << 10

// BatchBudget bounds the bytes of batch bodies held at once by one
// daemon. A body's bytes are reserved before its buffer is allocated and
// returned when its request is answered. It is safe for concurrent use.
type BatchBudget struct {
	max  int64
	used atomic.Int64
	// bufs keeps the buffers of bodies with a Content-Length of at most
	// maxPooledBody for the next ones (*[]byte); ParseBatch copies what
	// it keeps, so a buffer is free once its body is parsed.
	bufs sync.Pool
}

// maxPooledBody bounds the bodies read into a pooled buffer: a 100-key
// batch is a few KiB.
const maxPooledBody = 64 << 10

// NewBatchBudget returns a budget of max bytes; max <= 0 selects
// DefaultBatchReadBytes.
func NewBatchBudget(max int64) *BatchBudget {
	if max <= 0 {
		max = DefaultBatchReadBytes
	}
	return &BatchBudget{max: max}
}

// Used is the number of bytes reserved now (a metric).
func (b *BatchBudget) Used() int64 { return b.used.Load() }

// Max is the budget's bound.
func (b *BatchBudget) Max() int64 { return b.max }

// reserve takes n bytes, or returns false when they would exceed the
// bound. A nil budget bounds nothing.
func (b *BatchBudget) reserve(n int64) bool {
	if b == nil {
		return true
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *BatchBudget) release(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// BatchRead configures ReadBatchRequest. Zero values are the defaults.
type BatchRead struct {
	Limits BatchLimits
	// Timeout bounds the time the whole body may take to arrive;
	// default DefaultBatchReadTimeout.
	Timeout time.Duration
	// Budget is the daemon's; nil bounds nothing beyond Limits.
	Budget *BatchBudget
}

// ReadBatchRequest reads and parses the body of a batch request. It
// checks a Content-Length against the size limit before reading
// anything, reserves the body's bytes in the budget before allocating
// them (all at once with a Content-Length, in doubling steps without
// one), and reads under a connection read deadline. The deadline is
// cleared once the body is in; after an error it stays, so that what
// net/http drains of an unread body is bounded by it too. Its errors
// wrap ErrBatchTooLarge, ErrBatchBusy, ErrBatchTimeout, or a parse error
// (see BatchStatus). On success the caller calls release once it is done
// with the keys; release is never nil.
func ReadBatchRequest(w http.ResponseWriter, r *http.Request, o BatchRead) (keys []BatchKey, release func(), err error) {
	lim := o.Limits.withDefaults()
	if o.Timeout <= 0 {
		o.Timeout = DefaultBatchReadTimeout
	}
	// A writer that cannot set deadlines (a test's recorder) reads
	// without one: only a real connection can be slow.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(o.Timeout)) == nil
	if r.ContentLength > lim.MaxBytes {
		return nil, noRelease, fmt.Errorf("%w: body of %d bytes, over %d", ErrBatchTooLarge, r.ContentLength, lim.MaxBytes)
	}
	var pooled *[]byte
	if o.Budget != nil && r.ContentLength > 0 && r.ContentLength <= min(maxPooledBody, lim.MaxBytes) {
		if pooled, _ = o.Budget.bufs.Get().(*[]byte); pooled == nil {
			pooled = new([]byte)
		}
		defer o.Budget.bufs.Put(pooled)
	}
	var into []byte
	if pooled != nil && int64(cap(*pooled)) >= r.ContentLength {
		into = *pooled // else readBodyInto allocates, once reserved
	}
	body, held, err := readBodyInto(r.Body, r.ContentLength, lim.MaxBytes, o.Budget, into)
	if pooled != nil && into == nil && body != nil {
		*pooled = body[:0] // allocated for this body: kept for the next
	}
	if err != nil {
		o.Budget.release(held)
		if errors.Is(err, ErrBatchTimeout) {
			// The rest of the body will not come in time either.
			w.Header().Set("Connection", "close")
		}
		return nil, noRelease, err
	}
	if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	release = func() { o.Budget.release(held) }
	keys, err = ParseBatch(body, lim)
	if err != nil {
		release()
		return nil, noRelease, err
	}
	return keys, release, nil
}

func noRelease() {}

// readBody reads a body of length bytes (-1: unknown) of at most max
// bytes, reserving in budget every buffer before it is allocated. Without
// a length the buffer doubles up to max, the new one reserved before the
// old one is copied and let go, so one body holds less than 2*max at
// its peak. held is what stays reserved, also on error.
func readBody(r io.Reader, length, max int64, budget *BatchBudget) (body []byte, held int64, err error) {
	return readBodyInto(r, length, max, budget, nil)
}

// readBodyInto is readBody into buf, when its capacity holds a body of a
// known length; the bytes are reserved all the same.
func readBodyInto(r io.Reader, length, max int64, budget *BatchBudget, buf []byte) (body []byte, held int64, err error) {
	if length == 0 {
		return nil, 0, nil
	}
	size := length
	if length < 0 {
		size = min(batchGrowStart, max)
	}
	if !budget.reserve(size) {
		return nil, 0, ErrBatchBusy
	}
	held = size
	if length < 0 || int64(cap(buf)) < length {
		buf = make([]byte, 0, size)
	} else {
		buf = buf[:0:length]
	}
	for {
		if len(buf) == cap(buf) {
			if length >= 0 {
				break // all of a known length
			}
			if int64(len(buf)) == max {
				// Full: one more byte is over the limit.
				var probe [1]byte
				n, rerr := io.ReadFull(r, probe[:])
				if n > 0 {
					return nil, held, fmt.Errorf("%w: body over %d bytes", ErrBatchTooLarge, max)
				}
				if rerr != io.EOF {
					return nil, held, readError(rerr, len(buf))
				}
				break
			}
			next := min(2*int64(cap(buf)), max)
			if !budget.reserve(next) {
				return nil, held, ErrBatchBusy
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			budget.release(held)
			held, buf = next, grown
		}
		n, rerr := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, held, readError(rerr, len(buf))
		}
	}
	if length >= 0 && int64(len(buf)) < length {
		return nil, held, fmt.Errorf("wire: reading batch: %w", io.ErrUnexpectedEOF)
	}
	return buf, held, nil
}

// readError wraps an error reading a body after n bytes.
func readError(err error, n int) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %d bytes in", ErrBatchTimeout, n)
	}
	return fmt.Errorf("wire: reading batch after %d bytes: %w", n, err)
}
