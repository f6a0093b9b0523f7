package source

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParsePin(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "1", want: "1"},
		{in: "1\n", want: "1"},
		{in: "v-2_b\r\n", want: "v-2_b"},
		{in: "", bad: true},
		{in: "\n", bad: true},
		{in: "1\n\n", bad: true},
		{in: "1\n2\n", bad: true},
		{in: " 1", bad: true},
		{in: "1 ", bad: true},
		{in: "_SUCCESS", bad: true},
		{in: "../1", bad: true},
		{in: "a/b", bad: true},
		{in: strings.Repeat("a", MaxPinSize+1), bad: true},
	} {
		got, err := ParsePin([]byte(tc.in))
		if tc.bad {
			if !errors.Is(err, ErrBadPin) || got != "" {
				t.Errorf("ParsePin(%q) = %q, %v; want ErrBadPin", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePin(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParsePin checks that whatever a marker holds, the parser either
// names a valid version that the marker spells (with at most a newline
// after it) or fails with ErrBadPin.
func FuzzParsePin(f *testing.F) {
	for _, s := range []string{"1", "2\n", "v\r\n", "", "\n", "1\n2", "../x", "_PIN", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParsePin(data)
		if err != nil {
			if !errors.Is(err, ErrBadPin) || v != "" {
				t.Fatalf("ParsePin(%q) = %q, %v", data, v, err)
			}
			return
		}
		if !ValidName(v) {
			t.Fatalf("ParsePin(%q) = invalid name %q", data, v)
		}
		rest := strings.TrimPrefix(string(data), v)
		if rest != "" && rest != "\n" && rest != "\r\n" {
			t.Fatalf("ParsePin(%q) = %q, leaving %q", data, v, rest)
		}
	})
}

func TestLocalPin(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, root+"/db/1/part-00000", "a")
	write(t, root+"/db/2/part-00000", "a")
	src, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := src.Pin(ctx, "db"); v != "" || err != nil {
		t.Fatalf("no marker: Pin = %q, %v", v, err)
	}
	if v, err := src.Pin(ctx, "nodb"); v != "" || err != nil {
		t.Fatalf("no db: Pin = %q, %v", v, err)
	}
	write(t, root+"/db/_PIN", "1\n")
	if v, err := src.Pin(ctx, "db"); v != "1" || err != nil {
		t.Fatalf("Pin = %q, %v; want 1", v, err)
	}
	if vs, _ := src.Versions(ctx, "db"); len(vs) != 2 {
		t.Fatalf("the marker shows up as a version: %v", vs)
	}
	write(t, root+"/db/_PIN", "1\n2\n")
	if v, err := src.Pin(ctx, "db"); !errors.Is(err, ErrBadPin) || v != "" {
		t.Fatalf("two lines: Pin = %q, %v; want ErrBadPin", v, err)
	}
	if err := os.Remove(root + "/db/_PIN"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root+"/db/_PIN", 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := src.Pin(ctx, "db"); !errors.Is(err, ErrBadPin) || v != "" {
		t.Fatalf("a directory: Pin = %q, %v; want ErrBadPin", v, err)
	}
	if err := os.Remove(root + "/db/_PIN"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", root+"/db/_PIN"); err != nil {
		t.Fatal(err)
	}
	if v, err := src.Pin(ctx, "db"); err == nil || v != "" {
		t.Fatalf("a symlink out of the root: Pin = %q, %v; want an error", v, err)
	}
}
