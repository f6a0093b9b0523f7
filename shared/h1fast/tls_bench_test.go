package h1fast

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkTLSPipelinedRecords: a client that pipelines over TLS as
// routerd does, a record per request, four records arriving in one
// write, answered together (readReceived); client and server in this
// process. "deadline" is a TLS connection whose transport cannot read
// only what was received (tls.NewListener's), "received-only" one that
// can (shared/tlsconfig's listeners): the difference is readReceived's
// two read deadline changes and the net package's error per batch.
func BenchmarkTLSPipelinedRecords(b *testing.B) {
	scfg, ccfg := tlsConfigs(b)
	for _, tc := range []struct {
		name string
		wrap func(net.Listener) net.Listener
	}{
		{"deadline", func(l net.Listener) net.Listener { return tls.NewListener(l, scfg) }},
		{"received-only", func(l net.Listener) net.Listener {
			return receivedOnlyListener{Listener: l, cfg: scfg, deadlines: new(atomic.Int64)}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(Options{TLS: true, Lookup: testLookup, Fallback: http.HandlerFunc(testFallback)})
			if err != nil {
				b.Fatal(err)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go s.Serve(tc.wrap(l))
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				s.Shutdown(ctx)
			})
			raw, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			hc := &heldConn{Conn: raw}
			c := tls.Client(hc, ccfg)
			defer c.Close()
			if err := c.Handshake(); err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReaderSize(c, 16<<10)
			req := []byte("GET /db/k HTTP/1.1\r\nHost: x\r\n\r\n")
			const depth = 4
			// Two requests in one record first: the server learns that
			// this client pipelines, as from routerd's bursts.
			if _, err := c.Write(append(append([]byte{}, req...), req...)); err != nil {
				b.Fatal(err)
			}
			for range 2 {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				hc.hold = true
				for range depth {
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
				}
				if err := hc.flush(); err != nil {
					b.Fatal(err)
				}
				for range depth {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
}

// heldConn holds what is written while hold is set, and flush writes it
// in one system call: several TLS records arrive together.
type heldConn struct {
	net.Conn
	hold bool
	buf  []byte
}

func (c *heldConn) Write(p []byte) (int, error) {
	if c.hold {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *heldConn) flush() error {
	c.hold = false
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}
