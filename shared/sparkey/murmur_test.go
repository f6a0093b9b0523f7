package sparkey

import "testing"

// Vectors from libsparkey's own MurmurHash3.c, built and run with seed 42.
func TestMurmur(t *testing.T) {
	for _, c := range []struct {
		in  string
		h32 uint32
		h64 uint64
	}{
		{"", 0x087fcd5c, 0xf02aa77dfa1b8523},
		{"a", 0xb2e5a263, 0x28259ca4fdf626b0},
		{"hello", 0xe2dbd2e1, 0xc4b8b3c960af6f08},
		{"key-000000001", 0x3a488bb7, 0x6f9ea3b87b181b3b},
		{"0123456789abcdef", 0x98e98b73, 0x818ea26bed3cb2a4},
		{"0123456789abcdefXYZ123", 0x50dea659, 0x3732d36f8eb62621},
	} {
		if got := Murmur32([]byte(c.in), 42); got != c.h32 {
			t.Errorf("Murmur32(%q) = %#x, want %#x", c.in, got, c.h32)
		}
		if got := Murmur64([]byte(c.in), 42); got != c.h64 {
			t.Errorf("Murmur64(%q) = %#x, want %#x", c.in, got, c.h64)
		}
	}
}
