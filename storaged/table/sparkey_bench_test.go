package table

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/snappy"

	"spangle/shared/sparkey"
)

// BenchmarkGetSparkey is BenchmarkGet's lookups over the same keys and
// values served in place from an uncompressed Sparkey pair (through the
// page cache, no block cache): compare its cpu-ns/op with BenchmarkGet's.
func BenchmarkGetSparkey(b *testing.B) {
	const keys = 125_000
	src := b.TempDir()
	lf, err := os.Create(filepath.Join(src, "x.spl"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := sparkey.NewWriter(lf, sparkey.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 100)
	for i := 0; i < keys; i++ {
		if err := w.Put(fmt.Appendf(nil, "key-%010d", i), val); err != nil {
			b.Fatal(err)
		}
	}
	var framed bytes.Buffer
	if err := w.Close(&framed); err != nil {
		b.Fatal(err)
	}
	lf.Close()
	dir := filepath.Join(b.TempDir(), "p-0")
	pb, err := CreatePartition(dir, BuildOptions{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := pb.Finish(); err != nil {
		b.Fatal(err)
	}
	ix, _ := io.ReadAll(snappy.NewReader(&framed))
	_, ixPath, _ := SparkeyPaths(dir, "pair")
	os.WriteFile(ixPath, ix, 0o644)
	log, _ := os.ReadFile(filepath.Join(src, "x.spl"))
	if _, err := PlaceSparkeyPair(dir, "pair", 0, 1, bytes.NewReader(log), int64(len(log)), "x.spl", "x.spi",
		func([]byte, int64) error { return nil }); err != nil {
		b.Fatal(err)
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchGets(b, p, keys)
}
