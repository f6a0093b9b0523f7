package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"spangle/shared/wire"
)

// TestHTTPUpstreamBatch: a batch is POST /<db> of the escaped keys,
// pinned, asking for the compact answer; the answer's Content-Type
// says which form came back, so an older storaged's JSON is read too.
func TestHTTPUpstreamBatch(t *testing.T) {
	for _, old := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.Method != "POST" || r.URL.EscapedPath() != "/db" || string(body) != "a%2Fb\nc\n" || r.Header.Get(wire.HeaderVersion) != "v7" {
				t.Errorf("%s %s %q version %q", r.Method, r.URL.EscapedPath(), body, r.Header.Get(wire.HeaderVersion))
			}
			if !wire.BatchAccepts(r.Header) {
				t.Errorf("Accept %q: the compact answer not asked for", r.Header.Values("Accept"))
			}
			w.Header().Set(wire.HeaderVersion, "v7")
			if old {
				w.Header().Set("Content-Type", wire.ContentTypeJSON)
				io.WriteString(w, `{"version":"v7","found":{"a%2Fb":"eA=="},"missing":["c"],"failed":{}}`)
				return
			}
			w.Header().Set("Content-Type", wire.ContentTypeBatchBinary)
			w.Write(wire.AppendBatchMissing(wire.AppendBatchFound(wire.AppendBatchBinaryHead(nil, "v7", 2), []byte("x"))))
		}))
		u := NewHTTPUpstream(HTTPOptions{})
		resp, err := u.Get(context.Background(), strings.TrimPrefix(srv.URL, "http://"),
			&Request{DB: "db", Version: "v7", Keys: [][]byte{[]byte("a/b"), []byte("c")}})
		u.CloseIdleConnections()
		srv.Close()
		if err != nil || resp.Status != 200 || resp.Version != "v7" {
			t.Fatalf("old %v: %+v %v", old, resp, err)
		}
		switch {
		case old && resp.ContentType != wire.ContentTypeJSON:
			t.Fatalf("JSON answer of Content-Type %q", resp.ContentType)
		case !old:
			v, entries, err := wire.DecodeBatchBinary(resp.Body)
			if err != nil || resp.ContentType != wire.ContentTypeBatchBinary || v != "v7" || len(entries) != 2 || string(entries[0].Value) != "x" {
				t.Fatalf("compact answer %q (%q): %v", resp.Body, resp.ContentType, err)
			}
		}
	}
}

// TestBatchOnGetConnections: batches keep one kept-alive connection
// (single GETs keep their pipelined one beside it), head and body of a
// batch arrive whole, and a batch whose kept-alive connection the node
// closed is sent once more on a new one, as a GET is.
func TestBatchOnGetConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.HeaderVersion, "v1")
		if r.Method == "GET" {
			io.WriteString(w, "one")
			return
		}
		body, _ := io.ReadAll(r.Body)
		if string(body) != "a\nb%20c\n" || r.ContentLength != int64(len(body)) {
			t.Errorf("batch body %q, Content-Length %d", body, r.ContentLength)
		}
		w.Header().Set("Content-Type", wire.ContentTypeBatchBinary)
		w.Write(wire.AppendBatchMissing(wire.AppendBatchFound(wire.AppendBatchBinaryHead(nil, "v1", 2), []byte("x"))))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	u := NewHTTPUpstream(HTTPOptions{})
	defer u.Close()
	batch := &Request{DB: "db", Version: "v1", Keys: [][]byte{[]byte("a"), []byte("b c")}}
	single := &Request{DB: "db", Version: "v1", Key: []byte("k")}
	for i := 0; i < 6; i++ {
		req := batch
		if i%2 == 1 {
			req = single
		}
		resp, err := u.Get(context.Background(), addr, req)
		if err != nil || resp.Status != 200 || resp.Version != "v1" {
			t.Fatalf("request %d: %+v %v", i, resp, err)
		}
		if req == batch {
			if _, entries, err := wire.DecodeBatchBinary(resp.Body); err != nil || len(entries) != 2 {
				t.Fatalf("request %d: answer %q: %v", i, resp.Body, err)
			}
		}
		if i == 3 {
			srv.CloseClientConnections() // the node drops its kept-alive connections
		}
	}
	if n := conns.Load(); n != 4 {
		t.Fatalf("%d connections, want 4 (the batches' and the GETs', before the node closed them and after)", n)
	}
}
