package certgen

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// File names WriteSet writes in its directory.
const (
	CAFile            = "ca.pem"
	CAKeyFile         = "ca-key.pem"
	PeerFile          = "node.pem"
	PeerKeyFile       = "node-key.pem"
	ClientFile        = "client.pem"
	ClientKeyFile     = "client-key.pem"
	RouterFile        = "router.pem"
	RouterKeyFile     = "router-key.pem"
	DefaultCAName     = "spangle CA"
	DefaultClientName = "spangle-client"
)

// SetOptions describe a set of demo certificates.
type SetOptions struct {
	// Names are the peers' certificate's SANs (storaged: server and
	// peer client).
	Names []string
	// ClientNames are the client certificate's (routerd, tools); default
	// DefaultClientName.
	ClientNames []string
	// RouterNames, when set, are the SANs of a third certificate for
	// routerd, for server and client use: it serves the app-facing bind
	// (app_tls) and the xDS server, and dials storaged. Without them no
	// router.pem is written.
	RouterNames []string
	// Validity of the certificates; default DefaultValidity.
	Validity time.Duration
}

// WriteSet makes a CA and, signed by it, a peer certificate for o.Names
// (server and client use) and a client certificate for o.ClientNames,
// and writes them into dir (created): ca.pem, ca-key.pem, node.pem,
// node-key.pem, client.pem, client-key.pem, and with o.RouterNames
// router.pem and router-key.pem. Keys are written 0600.
func WriteSet(dir string, o SetOptions) error {
	if len(o.Names) == 0 {
		return fmt.Errorf("certgen: no names for the peer certificate")
	}
	if len(o.ClientNames) == 0 {
		o.ClientNames = []string{DefaultClientName}
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	ca, err := NewCA(DefaultCAName, time.Time{}, time.Time{})
	if err != nil {
		return err
	}
	now := time.Now()
	peer, err := ca.Issue(Request{Names: o.Names, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(o.Validity)})
	if err != nil {
		return err
	}
	client, err := ca.Issue(Request{Names: o.ClientNames, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(o.Validity), Usage: Client})
	if err != nil {
		return err
	}
	var router *Pair
	if len(o.RouterNames) > 0 {
		if router, err = ca.Issue(Request{Names: o.RouterNames, NotBefore: now.Add(-time.Minute), NotAfter: now.Add(o.Validity)}); err != nil {
			return err
		}
	}
	if err := WriteFile(filepath.Join(dir, CAFile), ca.CertPEM, 0o644); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, CAKeyFile), ca.KeyPEM, 0o600); err != nil {
		return err
	}
	if err := peer.Write(filepath.Join(dir, PeerFile), filepath.Join(dir, PeerKeyFile)); err != nil {
		return err
	}
	if err := client.Write(filepath.Join(dir, ClientFile), filepath.Join(dir, ClientKeyFile)); err != nil {
		return err
	}
	if router != nil {
		return router.Write(filepath.Join(dir, RouterFile), filepath.Join(dir, RouterKeyFile))
	}
	return nil
}
