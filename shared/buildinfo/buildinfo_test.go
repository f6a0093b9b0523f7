package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestGetNamesTheGoRelease(t *testing.T) {
	in := Get()
	if in.GoVersion != runtime.Version() || in.Version == "" || in.Commit == "" {
		t.Fatalf("Get() = %+v", in)
	}
	if s := in.String(); !strings.Contains(s, in.GoVersion) || !strings.Contains(s, in.Commit) {
		t.Fatalf("String() = %q", s)
	}
}
