package daemon

import (
	"testing"

	"spangle/storaged/config"
)

// TestBloomBits: filters are written only where lookups read them (a
// block cache, or Snappy tables), and never when the config turns them
// off.
func TestBloomBits(t *testing.T) {
	for _, c := range []struct {
		cache, bits int
		compression string
		want        int
	}{
		{0, 10, "none", -1},        // the default: mapped plain tables drop the filter
		{0, 10, "snappy", 10},      // Snappy blocks are read with pread, filter asked first
		{64 << 20, 10, "none", 10}, // a block cache asks the filter too
		{64 << 20, 16, "snappy", 16},
		{64 << 20, 0, "none", -1}, // 0 is off
		{0, 0, "snappy", -1},
	} {
		l := config.Default().LevelDB
		l.BlockCacheSize, l.BloomBitsPerKey, l.Compression = c.cache, c.bits, c.compression
		if got := bloomBits(l); got != c.want {
			t.Errorf("bloomBits(cache %d, bits %d, %s) = %d, want %d", c.cache, c.bits, c.compression, got, c.want)
		}
	}
}
