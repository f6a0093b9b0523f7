package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIssueNamesAndUsage(t *testing.T) {
	ca, err := NewCA("test", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(Request{Names: []string{"node.test", "10.0.0.5", "spiffe://td/storaged/a"}, Usage: Server})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cert
	if len(c.DNSNames) != 1 || len(c.IPAddresses) != 1 || len(c.URIs) != 1 || c.URIs[0].String() != "spiffe://td/storaged/a" {
		t.Fatalf("SANs: %v %v %v", c.DNSNames, c.IPAddresses, c.URIs)
	}
	if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Fatalf("usage %v", c.ExtKeyUsage)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node.test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Issue(Request{}); err == nil {
		t.Fatal("a certificate without a name was issued")
	}
}

func TestWriteSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := WriteSet(dir, SetOptions{Names: []string{"127.0.0.1"}, Validity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAFile, CAKeyFile, PeerFile, PeerKeyFile, ClientFile, ClientKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, ClientFile), filepath.Join(dir, ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if leaf.DNSNames[0] != DefaultClientName || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || leaf.NotAfter.After(time.Now().Add(2*time.Hour)) {
		t.Fatalf("client certificate %v %v %v", leaf.DNSNames, leaf.ExtKeyUsage, leaf.NotAfter)
	}
}

// TestWriteSetRouter: with RouterNames a router.pem is written that
// serves (app_tls, xDS) and dials (storaged) for those names; without
// them none.
func TestWriteSetRouter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := WriteSet(dir, SetOptions{Names: []string{"storaged1"}, RouterNames: []string{"routerd", "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, RouterFile), filepath.Join(dir, RouterKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "routerd", KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			t.Errorf("router certificate for usage %v: %v", u, err)
		}
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, RouterKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("router key: %v %v", fi, err)
	}
	other := filepath.Join(t.TempDir(), "certs")
	if err := WriteSet(other, SetOptions{Names: []string{"storaged1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, RouterFile)); !os.IsNotExist(err) {
		t.Fatalf("router.pem without RouterNames: %v", err)
	}
}
