// Command healthcheck is the probe inside spangle's scratch images: those
// have no shell or curl, so Docker's HEALTHCHECK runs this instead. It GETs
// one URL and exits 0 on a 200 answer, 1 otherwise. For an https URL,
// -ca names the CA file the server's certificate must chain to, and
// -cert and -key the client certificate a server with client_auth =
// "require" asks for; the files are read at every probe, so rotated ones
// are used at once.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"spangle/shared/tlsconfig"
)

func main() {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	ca := fs.String("ca", "", "CA file (PEM) for an https URL")
	cert := fs.String("cert", "", "client certificate file (PEM)")
	key := fs.String("key", "", "client key file (PEM)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: healthcheck [-ca F [-cert F -key F]] http(s)://host:port/healthz")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	cfg, err := tlsConfig(*ca, *cert, *key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(2)
	}
	if err := probe(fs.Arg(0), cfg, 2*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// tlsConfig builds the client config from the files (the daemons' own
// loader: the key must match the certificate, which must chain to the
// CA); nil without any.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("-cert and -key go together")
	}
	if caFile == "" {
		return nil, errors.New("-cert needs -ca")
	}
	return tlsconfig.Static(tlsconfig.Settings{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, time.Now())
}

// probe GETs url within timeout and reports anything but a 200.
func probe(url string, cfg *tls.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s: status %d: %s", url, resp.StatusCode, body)
	}
	return nil
}
