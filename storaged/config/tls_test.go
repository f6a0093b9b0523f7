package config

import (
	"strings"
	"testing"
)

func TestTLSSection(t *testing.T) {
	c := Default()
	err := Decode(`
source = "/data"
[tls]
cert_file = "/etc/tls/node.pem"
key_file = "/etc/tls/node-key.pem"
ca_file = "/etc/tls/ca.pem"
client_auth = "verify_if_given"
peer_names = ["*.storaged.svc", "spiffe://prod/storaged/*"]
accept_plaintext = true
`, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TLS.CertFile != "/etc/tls/node.pem" || len(c.TLS.PeerNames) != 2 || !c.TLS.AcceptPlaintext {
		t.Fatalf("tls = %+v", c.TLS)
	}
	for _, bad := range []struct{ toml, key string }{
		{"[tls]\nca_file = \"/ca.pem\"\n", "tls.cert_file"},
		{"[tls]\ncert_file = \"/c\"\nkey_file = \"/k\"\nca_file = \"/a\"\nclient_auth = \"maybe\"\n", "tls.client_auth"},
		{"[tls]\ncert_file = \"/c\"\nkey_file = \"/k\"\nca_file = \"/a\"\naccept_plaintext = true\n", "tls.accept_plaintext"},
		{"[tls]\ncert_fil = \"/c\"\n", "cert_fil"},
	} {
		c := Default()
		c.Source = "/data"
		err := Decode(bad.toml, &c)
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%q: %v, want an error naming %s", bad.toml, err, bad.key)
		}
	}
}
