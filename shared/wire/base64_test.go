package wire

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// AppendBase64 writes what encoding/base64 writes, for every length up
// to a few times its step and every byte value, after whatever dst held.
func TestAppendBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 300; n++ {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.IntN(256))
		}
		if n == 256 {
			for i := range src {
				src[i] = byte(i)
			}
		}
		got := AppendBase64([]byte("x"), src)
		want := base64.StdEncoding.AppendEncode([]byte("x"), src)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %q, want %q", n, got, want)
		}
	}
}

func FuzzAppendBase64(f *testing.F) {
	for _, s := range []string{"", "a", "ab", "abc", "abcdefgh", "\x00\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8", "0123456789abcdefghijklmnopqrstuvwxyz"} {
		f.Add([]byte("pre"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, dst, src []byte) {
		got := AppendBase64(bytes.Clone(dst), src)
		want := base64.StdEncoding.AppendEncode(bytes.Clone(dst), src)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendBase64(%q, %q) = %q, want %q", dst, src, got, want)
		}
	})
}

func BenchmarkAppendBase64(b *testing.B) {
	src := bytes.Repeat([]byte("spangle value "), 8)[:100]
	dst := make([]byte, 0, 256)
	b.Run("wire", func(b *testing.B) {
		for b.Loop() {
			dst = AppendBase64(dst[:0], src)
		}
	})
	b.Run("std", func(b *testing.B) {
		for b.Loop() {
			dst = base64.StdEncoding.AppendEncode(dst[:0], src)
		}
	})
}
