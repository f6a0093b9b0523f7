package tlsconfig

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// maxFileSize bounds a certificate, key or CA file read: a PEM bundle of
// a few dozen certificates is far below it.
const maxFileSize = 1 << 20

// maxCACerts bounds the certificates of a CA file.
const maxCACerts = 1000

// bundle is one validated set: the certificate with its key, and the CA
// pool. It never changes once built.
type bundle struct {
	cert *tls.Certificate // nil without cert_file
	leaf *x509.Certificate
	pool *x509.CertPool
	hash [sha256.Size]byte // of the files' contents, to see a change
}

// files are the raw contents of a set.
type files struct {
	cert, key, ca []byte
}

// readFiles reads the configured files, each bounded; an error names the
// file.
func readFiles(s Settings) (files, [sha256.Size]byte, error) {
	var f files
	h := sha256.New()
	for _, x := range []struct {
		path string
		dst  *[]byte
	}{{s.CertFile, &f.cert}, {s.KeyFile, &f.key}, {s.CAFile, &f.ca}} {
		if x.path == "" {
			h.Write([]byte{0})
			continue
		}
		b, err := readBounded(x.path)
		if err != nil {
			return files{}, [sha256.Size]byte{}, err
		}
		*x.dst = b
		var n [8]byte
		for i := range n {
			n[i] = byte(len(b) >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return f, sum, nil
}

func readBounded(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: reading %s: %w", path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("tlsconfig: %s: larger than %d bytes", path, maxFileSize)
	}
	return b, nil
}

// parse validates a set read from the files of s at now: the CA file
// holds at least one certificate and nothing else, the key matches the
// certificate, the certificate is within its validity and chains to the
// CA. Errors name the file at fault and never quote a key.
func parse(s Settings, f files, now time.Time) (*bundle, error) {
	b := &bundle{}
	if s.CAFile != "" {
		pool, err := parseCA(f.ca)
		if err != nil {
			return nil, fmt.Errorf("tlsconfig: ca_file %s: %w", s.CAFile, err)
		}
		b.pool = pool
	}
	if s.CertFile == "" {
		return b, nil
	}
	chain, err := parseCerts(f.cert, 16)
	if err != nil {
		return nil, fmt.Errorf("tlsconfig: cert_file %s: %w", s.CertFile, err)
	}
	pair, err := tls.X509KeyPair(f.cert, f.key)
	if err != nil {
		// X509KeyPair's errors speak of the PEM blocks, never of their
		// content.
		return nil, fmt.Errorf("tlsconfig: key_file %s does not match cert_file %s: %w", s.KeyFile, s.CertFile, err)
	}
	leaf := chain[0]
	pair.Leaf = leaf
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("tlsconfig: cert_file %s: not valid before %s", s.CertFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("tlsconfig: cert_file %s: expired at %s", s.CertFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if b.pool != nil {
		inter := x509.NewCertPool()
		for _, c := range chain[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.pool, Intermediates: inter, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return nil, fmt.Errorf("tlsconfig: cert_file %s is not signed by ca_file %s: %w", s.CertFile, s.CAFile, err)
		}
	}
	b.cert, b.leaf = &pair, leaf
	return b, nil
}

// parseCA reads a pool of CA certificates.
func parseCA(data []byte) (*x509.CertPool, error) {
	certs, err := parseCerts(data, maxCACerts)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// errNoCert: a file meant to hold certificates holds none.
var errNoCert = errors.New("no PEM certificate")

// parseCerts reads the PEM CERTIFICATE blocks of data, at most max; any
// other block, or text that is not PEM, is an error (a truncated file
// is one).
func parseCerts(data []byte, max int) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := data
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, not CERTIFICATE", len(out)+1, blk.Type)
		}
		if len(out) == max {
			return nil, fmt.Errorf("more than %d certificates", max)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errNoCert
	}
	if len(trimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%d bytes after the last certificate are not PEM (truncated?)", len(trimSpace(rest)))
	}
	return out, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
