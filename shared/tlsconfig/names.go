package tlsconfig

import (
	"crypto/x509"
	"strings"
)

// Identities are the names a certificate carries that peer_names can
// match: its DNS SANs and its URI SANs (SPIFFE IDs).
func Identities(c *x509.Certificate) []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.DNSNames)+len(c.URIs))
	out = append(out, c.DNSNames...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}

// MatchName reports whether name matches pattern: '*' stands for one or
// more characters other than '.' and '/', everything else for itself
// (ASCII case folded, as DNS names compare).
func MatchName(pattern, name string) bool {
	i := strings.IndexByte(pattern, '*')
	if i < 0 {
		return strings.EqualFold(pattern, name)
	}
	if len(name) < i || !strings.EqualFold(pattern[:i], name[:i]) {
		return false
	}
	pattern, name = pattern[i+1:], name[i:]
	// The star takes at least one character, never a '.' or '/', and the
	// rest of the pattern must match what is left. A pattern holds at
	// most maxStars stars (checkPattern), so trying each length stays
	// cheap.
	for n := 1; n <= len(name); n++ {
		if c := name[n-1]; c == '.' || c == '/' {
			return false
		}
		if MatchName(pattern, name[n:]) {
			return true
		}
	}
	return false
}

// matchAny reports whether one of the certificate's identities matches
// one of patterns.
func matchAny(patterns []string, c *x509.Certificate) bool {
	for _, id := range Identities(c) {
		for _, p := range patterns {
			if MatchName(p, id) {
				return true
			}
		}
	}
	return false
}
