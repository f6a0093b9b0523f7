package testutil

import (
	"path/filepath"
	"testing"

	"spangle/shared/sparkey"
	"spangle/shared/versiontest"
)

// WriteSparkeyVersion writes records as a Sparkey version of n partitions
// under root/db/version, as a sequins job would: per partition, the sorted
// pair part-<p>.spl and part-<p>.spi.sz (empty partitions too), and a
// _SUCCESS file.
func WriteSparkeyVersion(t testing.TB, root, db, version string, n int, opts sparkey.WriterOptions, recs []Record) string {
	t.Helper()
	return versiontest.For(t).Write(root, db, version, versiontest.Options{Format: versiontest.Sparkey, Files: n, Sort: true, Sparkey: opts}, recs)
}

// WriteSparkeyPair writes dir/base.spl and dir/base.spi.sz holding recs,
// in the given order.
func WriteSparkeyPair(t testing.TB, dir, base string, opts sparkey.WriterOptions, recs []Record) {
	t.Helper()
	versiontest.For(t).File(filepath.Join(dir, base+".spl"), versiontest.Options{Format: versiontest.Sparkey, Sparkey: opts}, recs)
}
