package cliflags

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestUsageShowsDefaultsAndHidesTestFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	fs.Duration("settle-time", 5*time.Second, "settle")
	fs.String("bind", "0.0.0.0:9599", "address")
	fs.Duration("test-delay", 0, "tests only")
	SetUsage(fs, "Usage: x [flags]", "test-delay")
	err := fs.Parse([]string{"-bind", "1.2.3.4:5", "-help"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse: %v", err)
	}
	got := out.String()
	for _, want := range []string{"Usage: x [flags]", "(default 5s)", `(default "0.0.0.0:9599")`} {
		if !strings.Contains(got, want) {
			t.Errorf("usage lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "test-delay") || strings.Contains(got, "1.2.3.4") {
		t.Errorf("usage shows a hidden flag or a parsed value:\n%s", got)
	}
}
