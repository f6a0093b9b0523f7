package tlsconfig

import (
	"strings"
	"testing"
	"time"

	"spangle/shared/certgen"
)

// FuzzParse feeds arbitrary bytes as the cert, key and CA files: parse
// returns an error or a set, never panics, and never quotes a key.
func FuzzParse(f *testing.F) {
	ca, err := certgen.NewCA("fuzz CA", time.Time{}, time.Time{})
	if err != nil {
		f.Fatal(err)
	}
	p, err := ca.Issue(certgen.Request{Names: []string{"a.test"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.CertPEM, p.KeyPEM, ca.CertPEM)
	f.Add(p.CertPEM[:len(p.CertPEM)/2], p.KeyPEM, ca.CertPEM)
	f.Add(p.CertPEM, p.KeyPEM[:40], ca.CertPEM[10:])
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), []byte{}, []byte("x"))
	f.Add(ca.CertPEM, p.KeyPEM, append(append([]byte{}, ca.CertPEM...), p.KeyPEM...))
	st := Settings{CertFile: "cert.pem", KeyFile: "key.pem", CAFile: "ca.pem"}
	f.Fuzz(func(t *testing.T, cert, key, caPEM []byte) {
		b, err := parse(st, files{cert: cert, key: key, ca: caPEM}, time.Now())
		if err != nil {
			if len(key) > 60 && strings.Contains(err.Error(), string(key[30:60])) {
				t.Fatalf("the error quotes the key: %v", err)
			}
			return
		}
		if b.cert == nil || b.leaf == nil || b.pool == nil {
			t.Fatal("parse accepted a set without its parts")
		}
	})
}

// FuzzMatchName checks that matching ends and that a name always
// matches itself as a pattern.
func FuzzMatchName(f *testing.F) {
	f.Add("*.spangle.test", "a.spangle.test")
	f.Add("spiffe://td/*/x", "spiffe://td/a/x")
	f.Add("a*b*c*d", "aXbYcZd")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if checkPattern(pattern) == nil {
			MatchName(pattern, name)
		}
		if !strings.Contains(name, "*") && !MatchName(name, name) {
			t.Fatalf("%q does not match itself", name)
		}
	})
}
