package load

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPostSendsBodies: with Body set, every request is a POST of the
// body given, on a connection kept alive across requests.
func TestPostSendsBodies(t *testing.T) {
	var posts, bad atomic.Int64
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/db" || !strings.HasPrefix(string(b), "k") || len(b) != 3 {
			bad.Add(1)
			w.WriteHeader(400)
			return
		}
		posts.Add(1)
		w.Write([]byte(`{"found":{}}`))
	}))
	body := func(dst []byte, rng *rand.Rand) []byte { return append(dst, 'k', byte('a'+rng.IntN(3)), '\n') }
	res, err := Run(context.Background(), Options{Addr: addr, Path: fixed("/db"), Body: body, Conns: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || bad.Load() != 0 || posts.Load() < res.Requests {
		t.Fatalf("requests %d, errors %d (%s), bad %d, posts %d", res.Requests, res.Errors, res.FirstError, bad.Load(), posts.Load())
	}
	// Check judges every answer: a body it refuses is an error.
	res, err = Run(context.Background(), Options{Addr: addr, Path: fixed("/db"), Body: body, Conns: 2, Duration: 200 * time.Millisecond,
		Check: func(b []byte) error {
			if string(b) != `{"found":{}}` {
				return errors.New("unexpected body")
			}
			return errors.New("refused")
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "refused") {
		t.Fatalf("with a refusing check: requests %d, errors %d (%s)", res.Requests, res.Errors, res.FirstError)
	}
}
