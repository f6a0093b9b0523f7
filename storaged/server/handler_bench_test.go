package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"spangle/shared/wire"
)

// nullWriter is a ResponseWriter that keeps nothing, so that
// BenchmarkHandlerGet measures the handler alone.
type nullWriter struct {
	h    http.Header
	code int
}

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nullWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkHandlerGet is the handler's cost for one key of the test
// data, the lookup included.
func BenchmarkHandlerGet(b *testing.B) {
	s := newFixture(b, Options{}).handler
	r := httptest.NewRequest("GET", "/baby-names/1881/boy", nil)
	w := &nullWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkHandlerBatch is the handler's cost for a batch of 16 keys of
// the test data (found and missing), the body read and the lookups
// included: answered in JSON, as to an app, and in the compact form
// routerd asks for.
func BenchmarkHandlerBatch(b *testing.B) {
	s := newFixture(b, Options{}).handler
	var body strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&body, "%d/boy\n", 1880+i)
	}
	for _, accept := range []string{wire.ContentTypeJSON, wire.ContentTypeBatchBinary} {
		b.Run(strings.TrimPrefix(accept, "application/"), func(b *testing.B) {
			w := &nullWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				r := httptest.NewRequest("POST", "/baby-names", strings.NewReader(body.String()))
				r.Header.Set("Accept", accept)
				s.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}
