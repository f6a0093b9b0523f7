package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// ErrVersion is returned by a command line parser given --version: the
// main prints the build (package buildinfo) and exits 0.
var ErrVersion = errors.New("--version")

// SetUsage makes fs's usage text (printed for -h, --help and a bad
// flag) list every flag but those named in hidden, each with its
// default as registered, under the line head.
func SetUsage(fs *flag.FlagSet, head string, hidden ...string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintln(out, head)
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(out)
		fs.VisitAll(func(f *flag.Flag) {
			for _, h := range hidden {
				if f.Name == h {
					return
				}
			}
			shown.Var(f.Value, f.Name, f.Usage)
			// The default as registered, not the value parsed so far.
			shown.Lookup(f.Name).DefValue = f.DefValue
		})
		shown.PrintDefaults()
	}
}

// SplitList splits a comma-separated flag value, trimming the spaces
// around each item and dropping empty ones.
func SplitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// List is a flag.Value holding a comma-separated list in *P; each Set
// replaces it.
type List struct{ P *[]string }

func (l List) String() string {
	if l.P == nil {
		return ""
	}
	return strings.Join(*l.P, ",")
}

// Set implements flag.Value.
func (l List) Set(s string) error {
	*l.P = SplitList(s)
	return nil
}
