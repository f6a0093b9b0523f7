package tlsconfig

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"spangle/shared/certgen"
)

// BenchmarkHandshake is one connection of a cluster client to a cluster
// server over mutual TLS, client and server in this process: what a new
// upstream connection costs routerd and storaged together. resumed
// dials with the Source's session cache warm.
func BenchmarkHandshake(b *testing.B) {
	dir := b.TempDir()
	if err := certgen.WriteSet(dir, certgen.SetOptions{Names: []string{"127.0.0.1"}}); err != nil {
		b.Fatal(err)
	}
	p := func(n string) string { return dir + "/" + n }
	srv, err := New(Options{Settings: Settings{CertFile: p(certgen.PeerFile), KeyFile: p(certgen.PeerKeyFile), CAFile: p(certgen.CAFile), ClientAuth: "require"}})
	if err != nil {
		b.Fatal(err)
	}
	cli, err := New(Options{Settings: Settings{CertFile: p(certgen.ClientFile), KeyFile: p(certgen.ClientKeyFile), CAFile: p(certgen.CAFile)}})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tl := srv.Listen(l)
	defer tl.Close()
	go func() {
		buf := make([]byte, 1)
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(buf) // the handshake, then the client's byte
				c.Write(buf)
				c.Read(buf)
			}()
		}
	}()
	dial := cli.DialTLS(&net.Dialer{Timeout: 5 * time.Second})
	one := func(b *testing.B) bool {
		c, err := dial(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte{1})
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err != nil {
			b.Fatal(err)
		}
		return c.(*tls.Conn).ConnectionState().DidResume
	}
	b.Run("resumed", func(b *testing.B) {
		one(b)
		resumed := 0
		for i := 0; i < b.N; i++ {
			if one(b) {
				resumed++
			}
		}
		b.ReportMetric(float64(resumed)/float64(b.N), "resumed/op")
	})
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cli.sessions = tls.NewLRUClientSessionCache(1)
			one(b)
		}
	})
}
