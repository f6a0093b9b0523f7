package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"spangle/shared/buildinfo"
	"spangle/shared/tlsconfig"
)

const usage = `usage:
  spangle pin    --source <root> <db> <version>   write <root>/<db>/_PIN: roll back to (or freeze at) version
  spangle unpin  --source <root> <db>             delete the marker: roll forward to the newest version
  spangle status --addr <host:port>               the pins a storaged or routerd follows
                 [--tls-ca F --tls-cert F --tls-key F]   over TLS ([tls]'s ca_file, cert_file, key_file)
  spangle certs  --out <dir> --names <n,...>      make a CA and certificates for a demo or test cluster
                 [--client-names n,...] [--router-names n,...] [--validity D]
  spangle zk-acl --zk <host:port> [...]           set the cluster's ZooKeeper ACL on its znodes (zk-acl --help)
  spangle help                                    this text
  spangle --version                               the version, commit and Go release
`

// command is one subcommand: its flag, what its arguments are, and
// whether that flag must be given.
type command struct {
	flag, flagHelp string
	args           []string
}

var commands = map[string]command{
	"pin":    {"source", "the source root (a path or file:// URI)", []string{"<db>", "<version>"}},
	"unpin":  {"source", "the source root (a path or file:// URI)", []string{"<db>"}},
	"status": {"addr", "a storaged's or routerd's host:port", nil},
}

// Main runs the spangle command with args (without the program name)
// and returns its exit code: 0, 1 for a failure, 2 for bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "spangle", buildinfo.Get())
		return 0
	case "certs":
		return certs(args[1:], stdout, stderr)
	case "zk-acl":
		return ZKACL(args[1:], os.Getenv, stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "spangle: unknown command %q\n%s", args[0], usage)
		return 2
	}
	name := "spangle " + args[0]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	val := fs.String(cmd.flag, "", cmd.flagHelp+" (required)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long the command may take")
	var st tlsconfig.Settings
	if args[0] == "status" {
		fs.StringVar(&st.CAFile, "tls-ca", "", "CA file: ask over https, verifying the server against it ([tls] ca_file)")
		fs.StringVar(&st.CertFile, "tls-cert", "", "client certificate file, when the server requires one ([tls] cert_file)")
		fs.StringVar(&st.KeyFile, "tls-key", "", "its key file ([tls] key_file)")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s --%s <%s> %s\n", name, cmd.flag, cmd.flag, strings.Join(cmd.args, " "))
		fs.PrintDefaults()
	}
	// Flags may come before or after the arguments.
	var rest []string
	for in := args[1:]; ; {
		if err := fs.Parse(in); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		in = fs.Args()[1:]
	}
	if *val == "" {
		fmt.Fprintf(stderr, "%s: --%s is required: %s\n", name, cmd.flag, cmd.flagHelp)
		fs.Usage()
		return 2
	}
	if len(rest) != len(cmd.args) {
		fmt.Fprintf(stderr, "%s: want %d arguments (%s), got %d\n", name, len(cmd.args), strings.Join(cmd.args, " "), len(rest))
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch args[0] {
	case "pin":
		if err = Pin(ctx, *val, rest[0], rest[1]); err == nil {
			fmt.Fprintf(stdout, "pinned %s to %s; nodes follow at their next scan (refresh_period, SIGHUP) or the leader's next round\n", rest[0], rest[1])
		}
	case "unpin":
		var had bool
		if had, err = Unpin(*val, rest[0]); err == nil && had {
			fmt.Fprintf(stdout, "unpinned %s; it rolls forward to its newest version\n", rest[0])
		} else if err == nil {
			fmt.Fprintf(stdout, "%s was not pinned\n", rest[0])
		}
	case "status":
		var (
			pins []DBPin
			hc   *http.Client
		)
		if hc, err = statusClient(st); err == nil {
			if pins, err = Status(ctx, hc, statusAddr(*val, st)); err == nil {
				Format(stdout, pins)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "spangle:", err)
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// statusClient is the HTTP client of spangle status: over TLS with the
// files given (crypto/tls's own verification), plaintext without.
func statusClient(st tlsconfig.Settings) (*http.Client, error) {
	cfg, err := tlsconfig.Static(st, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg}}, nil
}

// statusAddr makes a bare host:port https:// when TLS files are given.
func statusAddr(addr string, st tlsconfig.Settings) string {
	if st.Enabled() && !strings.Contains(addr, "://") {
		return "https://" + addr
	}
	return addr
}
