package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"spangle/shared/wire"
)

// BenchmarkHTTPUpstreamBatch is one 100-key batch through HTTPUpstream
// to a storaged-like server in this process answering 100 values of 100
// bytes in the compact form: client and server costs together.
func BenchmarkHTTPUpstreamBatch(b *testing.B) {
	answer := wire.AppendBatchBinaryHead(nil, "v1", 100)
	for i := 0; i < 100; i++ {
		answer = wire.AppendBatchFound(answer, []byte(strings.Repeat("v", 100)))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(wire.HeaderVersion, "v1")
		w.Header().Set("Content-Type", wire.ContentTypeBatchBinary)
		w.Header().Set("Content-Length", strconv.Itoa(len(answer))) // as storaged does
		w.Write(answer)
	}))
	defer srv.Close()
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%010d", i))
	}
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := &Request{DB: "db", Version: "v1", Keys: keys}
		for pb.Next() {
			resp, err := u.Get(context.Background(), addr, req)
			if err != nil || resp.Status != 200 || len(resp.Body) != len(answer) {
				b.Fatalf("%+v %v", resp, err)
			}
		}
	})
}
