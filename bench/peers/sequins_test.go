package peers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestWriteSequinsConfig decodes the written file the way sequins does
// (keys by their TOML names, [storage] a table) and checks every setting
// arrives under the name sequins' config.go reads.
func TestWriteSequinsConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sequins.conf")
	want := SequinsConfig{Source: "/data/src dir", Bind: "127.0.0.1:9599", LocalStore: "/data/store",
		Storage: SequinsStorage{Compression: "none"}}
	if err := WriteSequinsConfig(path, want); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Source     string `toml:"source"`
		Bind       string `toml:"bind"`
		LocalStore string `toml:"local_store"`
		Storage    struct {
			Compression string `toml:"compression"`
		} `toml:"storage"`
	}
	md, err := toml.DecodeFile(path, &got)
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%v in:\n%s", err, b)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("keys sequins does not read: %v", u)
	}
	if got.Source != want.Source || got.Bind != want.Bind || got.LocalStore != want.LocalStore ||
		got.Storage.Compression != want.Storage.Compression {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

func TestWriteSequinsConfigRejects(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]SequinsConfig{
		"no source":   {Bind: "127.0.0.1:1", LocalStore: dir, Storage: SequinsStorage{Compression: "none"}},
		"bad codec":   {Source: dir, Bind: "127.0.0.1:1", LocalStore: dir, Storage: SequinsStorage{Compression: "lz4"}},
		"empty codec": {Source: dir, Bind: "127.0.0.1:1", LocalStore: dir},
	} {
		path := filepath.Join(dir, "c.conf")
		if err := WriteSequinsConfig(path, c); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: file written anyway", name)
		}
	}
}
