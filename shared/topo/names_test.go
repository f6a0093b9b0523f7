package topo

import (
	"regexp"
	"testing"
)

// nameSpec is ValidName's definition, which the byte loop must match.
var nameSpec = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"": false, "a": true, "Z": true, "0": true, "db": true, "v-1_2": true,
		"2026-11-23T01:00": false, "20261123_01-x": true, "A9z-_": true,
		"_x": false, "-x": false, ".x": false, "x.y": false, "x/y": false,
		"x@y": false, "x y": false, "x\n": false, "\nx": false, "é": false,
		"x\x00": false, "x%2F": false, "X~": false, "x:": false, "x[": false,
		"x`": false, "x{": false, "x@": false,
	}
	for s, want := range cases {
		if got := ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
		if spec := nameSpec.MatchString(s); spec != want {
			t.Errorf("case %q: the spec says %v", s, spec)
		}
	}
	// Every one- and two-byte string, against the definition.
	for a := 0; a < 256; a++ {
		if s := string([]byte{byte(a)}); ValidName(s) != nameSpec.MatchString(s) {
			t.Errorf("ValidName(%q) = %v, the spec disagrees", s, ValidName(s))
		}
		for b := 0; b < 256; b++ {
			if s := string([]byte{byte(a), byte(b)}); ValidName(s) != nameSpec.MatchString(s) {
				t.Errorf("ValidName(%q) = %v, the spec disagrees", s, ValidName(s))
			}
		}
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"", "db", "v-1_2", "_x", "x/y", "x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidName(s), nameSpec.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, the spec says %v", s, got, want)
		}
	})
}

// BenchmarkValidName is the cost of checking a typical db name, as every
// request's path parse does.
func BenchmarkValidName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !ValidName("bench-db_20261123") {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkValidNameRegexp is the regexp ValidName replaced, for scale.
func BenchmarkValidNameRegexp(b *testing.B) {
	for b.Loop() {
		if !nameSpec.MatchString("bench-db_20261123") {
			b.Fatal("invalid")
		}
	}
}
