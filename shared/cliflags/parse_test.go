package cliflags

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// conf is a command's configuration as Parse sees it: defaults, a file
// (here a map standing for the TOML) and flags.
type conf struct{ bind, level string }

func parseConf(args []string, file map[string]conf) (conf, error) {
	def := conf{bind: "127.0.0.1:1", level: "info"}
	c := def
	err := Parse(args, io.Discard, Command{
		Name:  "x",
		Usage: "Usage: x",
		Bind: func(fs *flag.FlagSet) {
			fs.StringVar(&c.bind, "bind", c.bind, "address")
			fs.StringVar(&c.level, "log-level", c.level, "level")
		},
		Load: func(path string) error {
			f, ok := file[path]
			if !ok {
				return errors.New("no such file " + path)
			}
			c = def
			if f.bind != "" {
				c.bind = f.bind
			}
			if f.level != "" {
				c.level = f.level
			}
			return nil
		},
		Check: func(fs *flag.FlagSet) error {
			if c.bind == "" {
				return errors.New("bind is empty")
			}
			return nil
		},
	})
	return c, err
}

func TestParseFlagsWinOverFile(t *testing.T) {
	file := map[string]conf{"a.toml": {bind: "10.0.0.1:2", level: "debug"}}
	c, err := parseConf([]string{"--log-level", "warn", "--config", "a.toml"}, file)
	if err != nil || c.bind != "10.0.0.1:2" || c.level != "warn" {
		t.Fatalf("flag before --config: %+v, %v; want the file's bind and the flag's level", c, err)
	}
	c, err = parseConf([]string{"--bind", "1.2.3.4:5"}, file)
	if err != nil || c.bind != "1.2.3.4:5" || c.level != "info" {
		t.Fatalf("no file: %+v, %v", c, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		is   error
	}{
		{[]string{"--version"}, "", ErrVersion},
		{[]string{"-h"}, "", flag.ErrHelp},
		{[]string{"--nope"}, "config: flag provided but not defined", nil},
		{[]string{"extra"}, `unexpected arguments ["extra"]`, nil},
		{[]string{"--bind", ""}, "bind is empty", nil},
		{[]string{"--config", "missing.toml"}, "no such file missing.toml", nil},
	} {
		_, err := parseConf(tc.args, nil)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %v containing %q", tc.args, err, tc.is, tc.want)
		}
	}
}

func TestSplitListAndList(t *testing.T) {
	if got := SplitList(" a, b,,c ,"); strings.Join(got, "|") != "a|b|c" {
		t.Fatalf("SplitList = %q", got)
	}
	if got := SplitList(" , "); got != nil {
		t.Fatalf("SplitList of nothing = %q, want nil", got)
	}
	var servers []string
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Var(List{P: &servers}, "zk", "servers")
	if err := fs.Parse([]string{"--zk", "z1:1, z2:2", "--zk", "z3:3"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(servers, ",") != "z3:3" || fs.Lookup("zk").Value.String() != "z3:3" {
		t.Fatalf("the last --zk wins: %q", servers)
	}
}
