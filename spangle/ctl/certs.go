package ctl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"spangle/shared/certgen"
	"spangle/shared/cliflags"
)

// certs runs `spangle certs --out DIR --names a,b,...`: a CA and the
// certificates of a demo or test cluster, made with crypto/x509.
func certs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spangle certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write the certificates into (required; created)")
	names := fs.String("names", "", "comma-separated SANs of the peers' certificate: DNS names, IPs, URIs such as spiffe://cluster/storaged (required)")
	clients := fs.String("client-names", certgen.DefaultClientName, "comma-separated SANs of the client certificate (routerd, tools: no peer)")
	routers := fs.String("router-names", "", "comma-separated SANs of a routerd certificate for server and client use (app_tls, xDS; dials storaged); none when empty")
	validity := fs.Duration("validity", certgen.DefaultValidity, "how long the certificates are valid")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: spangle certs --out DIR --names name,...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || *names == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "spangle certs: --out and --names are required, and nothing else")
		fs.Usage()
		return 2
	}
	if *validity <= 0 || *validity > 100*365*24*time.Hour {
		fmt.Fprintln(stderr, "spangle certs: --validity must be positive and at most 100 years")
		return 2
	}
	err := certgen.WriteSet(*out, certgen.SetOptions{Names: cliflags.SplitList(*names), ClientNames: cliflags.SplitList(*clients),
		RouterNames: cliflags.SplitList(*routers), Validity: *validity})
	if err != nil {
		fmt.Fprintln(stderr, "spangle:", err)
		return 1
	}
	router := ""
	if *routers != "" {
		router = fmt.Sprintf(", %s (routerd: %s)", certgen.RouterFile, *routers)
	}
	fmt.Fprintf(stdout, "wrote %s, %s (peers: %s), %s (clients: %s)%s and their keys into %s; keep %s off the cluster\n",
		certgen.CAFile, certgen.PeerFile, *names, certgen.ClientFile, *clients, router, *out, certgen.CAKeyFile)
	return 0
}
