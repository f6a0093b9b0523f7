package server

import (
	"errors"
	"net/url"
	"reflect"
	"testing"

	"spangle/shared/wire"
)

// targetSeeds are request paths as clients send them: plain, escaped
// where they need not be, with escaped slashes, bad escapes, bad names.
var targetSeeds = []string{
	"/baby-names/1881/boy", "/baby-names/1881%2Fboy", "/", "/healthz", "/bin", "/bin/",
	"/../etc/passwd", "/%2e%2e/x", "/bin/%00%ff", "/bin/a/../../b", "//x", "/bin/%41%42",
	"/bin/a%20b", "/bin/a b", "/bin/a%3Fb", "/b%69n/x", "/_x/y", "/bin/%", "/bin/%zz", "/bin/x%2F",
	"/bin/" + string(make([]byte, wire.MaxKeyLen+1)), "/bin/caf%C3%A9", "/bin/café",
}

// target answers what wire.ParsePath of the escaped path answers.
func TestTargetMatchesParsePath(t *testing.T) {
	for _, p := range targetSeeds {
		checkTarget(t, p)
	}
}

func FuzzTarget(f *testing.F) {
	for _, p := range targetSeeds {
		f.Add(p)
	}
	f.Fuzz(checkTarget)
}

func checkTarget(t *testing.T, path string) {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return
	}
	got, gerr := target(u)
	want, werr := wire.ParsePath(u.EscapedPath())
	if !reflect.DeepEqual(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && !errors.Is(gerr, errors.Unwrap(werr)) && gerr.Error() != werr.Error() {
		t.Fatalf("%q: target %+v, %v; ParsePath %+v, %v", path, got, gerr, want, werr)
	}
}
