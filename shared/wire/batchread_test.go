package wire

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// trickle returns at most n bytes a Read, as a slow client's body does.
type trickle struct {
	r io.Reader
	n int
}

func (t *trickle) Read(p []byte) (int, error) {
	return t.r.Read(p[:min(len(p), t.n)])
}

// TestReadBodyReservesFirst: every buffer is reserved before it is
// allocated, and a body never holds more than the budget allows.
func TestReadBodyReservesFirst(t *testing.T) {
	body := bytes.Repeat([]byte("key\n"), 5000) // 20,000 bytes
	for _, length := range []int64{-1, int64(len(body))} {
		b := NewBatchBudget(64 << 10)
		got, held, err := readBody(&trickle{bytes.NewReader(body), 1000}, length, 32<<10, b)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("length %d: %v", length, err)
		}
		if int64(cap(got)) > held || b.Used() != held {
			t.Fatalf("length %d: buffer of %d bytes, %d reserved, budget says %d", length, cap(got), held, b.Used())
		}
		b.release(held)
		if b.Used() != 0 {
			t.Fatalf("length %d: %d bytes left reserved", length, b.Used())
		}
	}
	// A budget too small for the next step refuses rather than allocates.
	b := NewBatchBudget(10 << 10)
	if _, held, err := readBody(bytes.NewReader(body), -1, 32<<10, b); !errors.Is(err, ErrBatchBusy) || held > 10<<10 {
		t.Fatalf("over the budget: %v, %d held", err, held)
	}
	if _, _, err := readBody(bytes.NewReader(body), int64(len(body)), 32<<10, b); !errors.Is(err, ErrBatchBusy) {
		t.Fatalf("a known length over the budget: %v", err)
	}
	// One byte over the limit, without a length.
	if _, _, err := readBody(bytes.NewReader(body[:8<<10+1]), -1, 8<<10, nil); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	if got, _, err := readBody(bytes.NewReader(body[:8<<10]), -1, 8<<10, nil); err != nil || len(got) != 8<<10 {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	// A body shorter than its Content-Length.
	if _, _, err := readBody(bytes.NewReader(body[:10]), 20, 32<<10, nil); err == nil || BatchStatus(err) != 400 {
		t.Fatalf("short body: %v", err)
	}
}

func TestBatchStatusOfReadErrors(t *testing.T) {
	for err, want := range map[error]int{ErrBatchBusy: 503, ErrBatchTimeout: 408, ErrBatchTooLarge: 413, ErrBatchBadKey: 400} {
		if got := BatchStatus(err); got != want {
			t.Errorf("%v: %d, want %d", err, got, want)
		}
	}
}

// FuzzReadBatchRequest: a body, with or without its Content-Length and
// read in pieces of any size, parses as ParseBatch parses it whole, or
// fails as it does; what it reserved is all given back.
func FuzzReadBatchRequest(f *testing.F) {
	for _, s := range []string{"a\nb\n", "", "\n", "a\n\nb", "%zz\n", "k%2F1\nk/1\n", "x\r\ny\r\n"} {
		f.Add(s, true, 3)
		f.Add(s, false, 1)
	}
	lim := BatchLimits{MaxKeys: 50, MaxBytes: 512}
	f.Fuzz(func(t *testing.T, body string, known bool, step int) {
		step = max(1, min(step, 4096))
		r := httptest.NewRequest("POST", "/db", &trickle{bytes.NewReader([]byte(body)), step})
		r.ContentLength = -1
		if known {
			r.ContentLength = int64(len(body))
		}
		b := NewBatchBudget(2 * lim.MaxBytes)
		keys, release, err := ReadBatchRequest(httptest.NewRecorder(), r, BatchRead{Limits: lim, Budget: b})
		want, werr := ParseBatch([]byte(body), lim)
		if (err == nil) != (werr == nil) || err != nil && BatchStatus(err) != BatchStatus(werr) {
			t.Fatalf("read: %v; whole: %v", err, werr)
		}
		if err == nil && !reflect.DeepEqual(keys, want) {
			t.Fatalf("keys %q, whole %q", keys, want)
		}
		release()
		if b.Used() != 0 {
			t.Fatalf("%d bytes left reserved", b.Used())
		}
	})
}

// Bodies read one after another into the budget's pooled buffer: each
// batch's keys stay its own after the buffer holds the next body, and
// the bytes are reserved until release as without the pool.
func TestReadBatchRequestPooledBuffer(t *testing.T) {
	b := NewBatchBudget(1 << 20)
	var kept [][]BatchKey
	var releases []func()
	for _, body := range []string{"aaaa\nbbbb\ncccc\n", "x\n", "dddddddd\neeeeeeee\n", "y%2Fz\n"} {
		r := httptest.NewRequest("POST", "/db", strings.NewReader(body))
		keys, release, err := ReadBatchRequest(httptest.NewRecorder(), r, BatchRead{Budget: b})
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		kept, releases = append(kept, keys), append(releases, release)
	}
	var got []string
	for _, keys := range kept {
		for _, k := range keys {
			got = append(got, k.Raw+"="+k.Key)
		}
	}
	if want := "aaaa=aaaa bbbb=bbbb cccc=cccc x=x dddddddd=dddddddd eeeeeeee=eeeeeeee y%2Fz=y/z"; strings.Join(got, " ") != want {
		t.Fatalf("keys %q, want %q", strings.Join(got, " "), want)
	}
	if used := b.Used(); used != 15+2+18+6 {
		t.Fatalf("%d bytes reserved before release, want %d", used, 15+2+18+6)
	}
	for _, release := range releases {
		release()
	}
	if used := b.Used(); used != 0 {
		t.Fatalf("%d bytes reserved after release", used)
	}
}
