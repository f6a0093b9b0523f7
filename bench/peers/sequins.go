package peers

import (
	"bytes"
	"fmt"
	"os"

	"github.com/BurntSushi/toml"
)

// SequinsConfig is the part of sequins' TOML config the benchmark sets;
// every other setting keeps sequins' default (no sharding, no ZooKeeper,
// no refresh period: it loads what it finds at start).
type SequinsConfig struct {
	// Source is the source root: a local dir of <db>/<version>/ dirs,
	// the layout storaged reads too.
	Source string `toml:"source"`
	// Bind is the host:port it serves on.
	Bind string `toml:"bind"`
	// LocalStore is where it writes the Sparkey files it builds.
	LocalStore string `toml:"local_store"`
	// Storage sets how those files are written.
	Storage SequinsStorage `toml:"storage"`
}

// SequinsStorage is sequins' [storage] table.
type SequinsStorage struct {
	// Compression of its blocks: "none" or "snappy" (sequins' default).
	// The benchmark sets "none", as storaged's tables are by default.
	Compression string `toml:"compression"`
}

// WriteSequinsConfig writes c as a sequins config file at path.
func WriteSequinsConfig(path string, c SequinsConfig) error {
	if c.Source == "" || c.Bind == "" || c.LocalStore == "" {
		return fmt.Errorf("peers: sequins config needs source, bind and local_store (got %+v)", c)
	}
	if c.Storage.Compression != "none" && c.Storage.Compression != "snappy" {
		return fmt.Errorf("peers: sequins storage compression %q is not none or snappy", c.Storage.Compression)
	}
	var buf bytes.Buffer
	buf.WriteString("# Written by spanglebench for the sequins side-by-side run.\n")
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return fmt.Errorf("peers: encoding sequins config: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	return nil
}
