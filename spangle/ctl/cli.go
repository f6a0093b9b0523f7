package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

const usage = `usage:
  spangle pin    --source <root> <db> <version>   write <root>/<db>/_PIN: roll back to (or freeze at) version
  spangle unpin  --source <root> <db>             delete the marker: roll forward to the newest version
  spangle status --addr <host:port>               the pins a storaged or routerd follows
`

// Main runs the spangle command with args (without the program name)
// and returns its exit code: 0, 1 for a failure, 2 for bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("spangle "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("source", "", "the source root (a path or file:// URI)")
	addr := fs.String("addr", "", "a storaged's or routerd's host:port")
	timeout := fs.Duration("timeout", 10*time.Second, "how long status may take")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch {
	case args[0] == "pin" && *root != "" && len(rest) == 2:
		if err = Pin(ctx, *root, rest[0], rest[1]); err == nil {
			fmt.Fprintf(stdout, "pinned %s to %s; nodes follow at their next scan (refresh_period, SIGHUP) or the leader's next round\n", rest[0], rest[1])
		}
	case args[0] == "unpin" && *root != "" && len(rest) == 1:
		var had bool
		if had, err = Unpin(*root, rest[0]); err == nil && had {
			fmt.Fprintf(stdout, "unpinned %s; it rolls forward to its newest version\n", rest[0])
		} else if err == nil {
			fmt.Fprintf(stdout, "%s was not pinned\n", rest[0])
		}
	case args[0] == "status" && *addr != "" && len(rest) == 0:
		var pins []DBPin
		if pins, err = Status(ctx, &http.Client{}, *addr); err == nil {
			Format(stdout, pins)
		}
	default:
		fmt.Fprint(stderr, usage)
		return 2
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
