package server

import (
	"strconv"
	"testing"
)

// Content-Length values, prebuilt or not, are the body's length.
func TestContentLength(t *testing.T) {
	s := newFixture(t, Options{}).srv
	for _, n := range []int{0, 1, 9, 10, 100, prebuiltLengths - 1, prebuiltLengths, prebuiltLengths + 1, 1 << 20} {
		if got := s.contentLength(n); len(got) != 1 || got[0] != strconv.Itoa(n) {
			t.Errorf("contentLength(%d) = %q", n, got)
		}
	}
}
