package snapshot

import (
	"regexp"
	"testing"

	"spangle/shared/tlsconfig"
)

// TestPatternRegex: Envoy matches a peer_names pattern as spangle does.
func TestPatternRegex(t *testing.T) {
	for _, c := range []struct{ pattern, name string }{
		{"*.spangle.test", "a.spangle.test"},
		{"*.spangle.test", "a.b.spangle.test"},
		{"*.spangle.test", "A.SPANGLE.test"},
		{"storaged-*.svc", "storaged-.svc"},
		{"a.b", "axb"},
		{"spiffe://td/ns/*/sa/x", "spiffe://td/ns/p/sa/x"},
		{"spiffe://td/ns/*/sa/x", "spiffe://td/ns/p/q/sa/x"},
	} {
		// Envoy's safe_regex must match the whole value.
		re := regexp.MustCompile("^(?:" + patternRegex(c.pattern) + ")$")
		if got, want := re.MatchString(c.name), tlsconfig.MatchName(c.pattern, c.name); got != want {
			t.Errorf("%q on %q: regex %v, MatchName %v", c.pattern, c.name, got, want)
		}
	}
}

func TestUpstreamTransportNeedsCA(t *testing.T) {
	if _, err := upstreamTransport(&UpstreamTLS{CertFile: "c", KeyFile: "k"}); err == nil {
		t.Fatal("upstream TLS without a CA accepted")
	}
}
