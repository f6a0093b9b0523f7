package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	cases := []struct {
		path    string
		db, key string
		hasKey  bool
		err     error
	}{
		{"/baby-names/1881/boy", "baby-names", "1881/boy", true, nil},
		{"/baby-names/1881%2Fboy", "baby-names", "1881/boy", true, nil},
		{"/db/%00%ff", "db", "\x00\xff", true, nil},
		{"/db/a+b", "db", "a+b", true, nil},
		{"/db/a%20b", "db", "a b", true, nil},
		{"/db", "db", "", false, nil},
		{"/db/", "", "", false, ErrEmptyKey},
		{"/", "", "", false, ErrBadPath},
		{"", "", "", false, ErrBadPath},
		{"/_hidden/k", "", "", false, ErrBadPath},
		{"/.x/k", "", "", false, ErrBadPath},
		{"/db/%zz", "", "", false, ErrBadPath},
		{"/db/" + strings.Repeat("k", MaxKeyLen+1), "", "", false, ErrKeyTooLong},
		{"/db/" + strings.Repeat("%41", MaxKeyLen+1), "", "", false, ErrKeyTooLong},
	}
	for _, c := range cases {
		got, err := ParsePath(c.path)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("ParsePath(%.40q) err = %v, want %v", c.path, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePath(%q): %v", c.path, err)
			continue
		}
		if got.DB != c.db || string(got.Key) != c.key || got.KeyString != c.key || got.HasKey != c.hasKey {
			t.Errorf("ParsePath(%q) = %+v, want db=%q key=%q", c.path, got, c.db, c.key)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/db/k", "/baby-names/1881%2Fboy", "/db", "/", "/db/%zz", "/a/b/c/%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		tg, err := ParsePath(path)
		if err != nil || !tg.HasKey {
			return
		}
		if len(tg.Key) == 0 || len(tg.Key) > MaxKeyLen {
			t.Fatalf("bad key length %d", len(tg.Key))
		}
		if tg.KeyString != string(tg.Key) {
			t.Fatalf("KeyString %q is not Key %q", tg.KeyString, tg.Key)
		}
		// The escaped form must round-trip.
		back, err := ParsePath(KeyPath(tg.DB, tg.Key))
		if err != nil || back.DB != tg.DB || !bytes.Equal(back.Key, tg.Key) {
			t.Fatalf("round trip of %q: %+v, %v", path, back, err)
		}
	})
}

// TestStatusOf: every error of ParsePath maps to its status with a plain
// message that echoes neither the package nor the input.
func TestStatusOf(t *testing.T) {
	cases := []struct {
		path string
		code int
		msg  string
	}{
		{"/db/" + strings.Repeat("k", MaxKeyLen+1), 414, "key too long"},
		{"/db/", 400, "empty key"},
		{"/db/%zz", 400, "bad path"},
		{"/_hidden/k", 400, "bad path"},
		{"/", 400, "bad path"},
	}
	for _, c := range cases {
		_, err := ParsePath(c.path)
		if err == nil {
			t.Fatalf("ParsePath(%.40q): no error", c.path)
		}
		code, msg := StatusOf(err)
		if code != c.code || msg != c.msg {
			t.Errorf("StatusOf(ParsePath(%.40q)) = %d %q, want %d %q", c.path, code, msg, c.code, c.msg)
		}
	}
}

func TestEqualFoldASCII(t *testing.T) {
	for _, c := range []struct {
		b, s string
		want bool
	}{
		{"Content-Length", "content-length", true},
		{"CONNECTION", "Connection", true},
		{"Connection", "Connectio", false},
		{"Conn[ction", "Conn{ction", false}, // '[' is not 'Z'+1 folded
		{"", "", true},
		{"K\xc3\xa9", "k\xc3\xa9", true},
		{"K\xc3\x89", "k\xc3\xa9", false}, // ASCII only
	} {
		if got := EqualFoldASCII([]byte(c.b), c.s); got != c.want {
			t.Errorf("EqualFoldASCII(%q, %q) = %v, want %v", c.b, c.s, got, c.want)
		}
	}
}
