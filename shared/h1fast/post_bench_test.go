package h1fast

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"spangle/shared/wire"
)

// BenchmarkPost: one connection sending 100-key batches (a 1.1 KB body
// read with wire.ReadBatchRequest, a 16 KB answer) to the fast path's
// POST and, on a connection handed over first, to net/http with the same
// handler; client and server in this process, so the difference is the
// server's connection loop.
func BenchmarkPost(b *testing.B) {
	budget := wire.NewBatchBudget(0)
	answer := bytes.Repeat([]byte("v"), 16<<10)
	handle := func(w http.ResponseWriter, r *http.Request, t wire.Target) {
		keys, release, err := wire.ReadBatchRequest(w, r, wire.BatchRead{Budget: budget})
		defer release()
		if err != nil || len(keys) != 100 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{wire.ContentTypeJSON}
		h["Content-Length"] = []string{strconv.Itoa(len(answer))}
		w.Write(answer)
	}
	s, err := New(Options{
		Lookup: func(w http.ResponseWriter, r *http.Request, t wire.Target) {},
		Fallback: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t, err := wire.ParsePath(r.URL.EscapedPath())
			if r.Method != http.MethodPost || err != nil {
				return
			}
			handle(w, r, t)
		}),
		Post: PostOptions{Handle: handle},
	})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(l)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	var body []byte
	for i := range 100 {
		body = append(body, "key-"+strconv.Itoa(100000+i)+"\n"...)
	}
	req := []byte("POST /db HTTP/1.1\r\nHost: x\r\nAccept: " + wire.BatchAccept + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
	for _, path := range []string{"fast", "net-http"} {
		b.Run(path, func(b *testing.B) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReaderSize(c, 32<<10)
			if path == "net-http" {
				io.WriteString(c, "GET /db/ HTTP/1.1\r\nHost: x\r\n\r\n")
				if _, err := http.ReadResponse(br, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); resp.StatusCode != 200 || n != int64(len(answer)) {
					b.Fatalf("%d, %d bytes", resp.StatusCode, n)
				}
			}
		})
	}
}
