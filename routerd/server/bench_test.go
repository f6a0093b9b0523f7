package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// nullWriter is a ResponseWriter that keeps nothing, so the benchmarks
// measure routerd's handler alone.
type nullWriter struct {
	h    http.Header
	code int
}

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nullWriter) WriteHeader(code int)        { w.code = code }

func benchHandler(b *testing.B, cacheBytes int64) {
	s, _, f := newTestServer(b, twoNodeMap(), cacheBytes)
	f.noRecord = true
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/db/some-key", nil)
		w := &nullWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			s.ServeHTTP(w, r)
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
		}
	})
}

// BenchmarkHandlerCacheHit is the handler's cost for a cached key.
func BenchmarkHandlerCacheHit(b *testing.B) { benchHandler(b, 1<<20) }

// BenchmarkHandlerUncached is the handler's cost through the proxy with a
// scripted upstream that answers at once.
func BenchmarkHandlerUncached(b *testing.B) { benchHandler(b, 0) }

// BenchmarkHandlerBatch is the handler's cost for a batch of 16 keys
// through the proxy, one upstream batch per partition, with a scripted
// upstream that answers at once.
func BenchmarkHandlerBatch(b *testing.B) {
	s, _ := newBatchTestServer(b, 0)
	var body strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&body, "key-%d\n", i)
	}
	benchPost(b, s, body.String())
}

// BenchmarkHandlerBatch100 is the handler's cost for a batch of 100
// keys of 100-byte values, as the bench's, on two partitions of one
// replica set, with a scripted upstream that answers at once in the
// compact form or in JSON (an older storaged).
func BenchmarkHandlerBatch100(b *testing.B) {
	for _, asJSON := range []bool{false, true} {
		name := "compact"
		if asJSON {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			s, f := newBatchTestServer(b, 0)
			f.json, f.noRecord, f.pad = asJSON, true, 100
			var body strings.Builder
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&body, "key%010d\n", i)
			}
			benchPost(b, s, body.String())
		})
	}
}

// benchPost measures POSTs of body to /db through s, each answered 200.
func benchPost(b *testing.B, s http.Handler, body string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &nullWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			r := httptest.NewRequest("POST", "/db", strings.NewReader(body))
			s.ServeHTTP(w, r)
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
		}
	})
}
