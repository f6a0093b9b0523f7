package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// CorruptFirstBlock flips one byte inside the first data block of every
// table of the partition database in dir, as bit rot would, in place
// (a daemon serving the partition reads the change through the page
// cache). The first block of a table holds its smallest keys, so the
// partition's smallest key is in a bad block. It returns the tables.
func CorruptFirstBlock(t testing.TB, dir string) []string {
	t.Helper()
	tables, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("testutil: no tables in %s: %v", dir, err)
	}
	for _, path := range tables {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Byte 20 is past the first entry's lengths, inside its key.
		var b [1]byte
		if _, err := f.ReadAt(b[:], 20); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x01
		if _, err := f.WriteAt(b[:], 20); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return tables
}
