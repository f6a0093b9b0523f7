package certgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultValidity is how long certificates last when no times are given.
const DefaultValidity = 365 * 24 * time.Hour

// CA is a certificate authority that signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM and KeyPEM are Cert and Key encoded.
	CertPEM, KeyPEM []byte
}

// Usage says what a certificate is for.
type Usage int

// Usages; a peer's certificate is both (storaged serves and dials peers).
const (
	Both Usage = iota
	Server
	Client
)

// Request describes a certificate to issue.
type Request struct {
	// Names are its SANs: an IP address, a URI (anything holding "://",
	// such as spiffe://cluster/storaged) or a DNS name. The first is also
	// the subject's common name.
	Names []string
	// NotBefore and NotAfter default to a minute ago and DefaultValidity
	// from now.
	NotBefore, NotAfter time.Time
	Usage               Usage
}

// Pair is an issued certificate and its key, PEM-encoded.
type Pair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed CA named name, valid from notBefore to
// notAfter (zero: a minute ago, and ten times DefaultValidity from now).
func NewCA(name string, notBefore, notAfter time.Time) (*CA, error) {
	now := time.Now()
	if notBefore.IsZero() {
		notBefore = now.Add(-time.Minute)
	}
	if notAfter.IsZero() {
		notAfter = now.Add(10 * DefaultValidity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certgen: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"spangle"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	cert, certPEM, keyPEM, err := sign(tmpl, tmpl, key, key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// sign makes tmpl's certificate for key, signed with signer as parent,
// and returns it parsed and PEM-encoded, with key PEM-encoded.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*x509.Certificate, []byte, []byte, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("certgen: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("certgen: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, encodeCert(der), keyPEM, nil
}

// Issue signs a certificate for r.
func (ca *CA) Issue(r Request) (*Pair, error) {
	if len(r.Names) == 0 {
		return nil, errors.New("certgen: a certificate needs at least one name")
	}
	now := time.Now()
	if r.NotBefore.IsZero() {
		r.NotBefore = now.Add(-time.Minute)
	}
	if r.NotAfter.IsZero() {
		r.NotAfter = now.Add(DefaultValidity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certgen: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.Names[0], Organization: []string{"spangle"}},
		NotBefore:    r.NotBefore,
		NotAfter:     r.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch r.Usage {
	case Server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	for _, n := range r.Names {
		switch {
		case strings.Contains(n, "://"):
			u, err := url.Parse(n)
			if err != nil {
				return nil, fmt.Errorf("certgen: name %q: %w", n, err)
			}
			tmpl.URIs = append(tmpl.URIs, u)
		case net.ParseIP(n) != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(n))
		case n == "":
			return nil, errors.New("certgen: empty name")
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	cert, certPEM, keyPEM, err := sign(tmpl, ca.Cert, key, ca.Key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Write writes the pair as certPath and keyPath (the key readable by its
// owner only).
func (p *Pair) Write(certPath, keyPath string) error {
	if err := WriteFile(certPath, p.CertPEM, 0o644); err != nil {
		return err
	}
	return WriteFile(keyPath, p.KeyPEM, 0o600)
}

// WriteFile writes data to path through a temporary file renamed over
// it, so that a reader polling path never sees half a file.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("certgen: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("certgen: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("certgen: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
