package testutil

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/sparkey"
	"spangle/shared/versiontest"
)

// BenchKey is key i of the benchmark dataset.
func BenchKey(i int) []byte { return fmt.Appendf(nil, "key-%09d", i) }

// BenchValue fills v (100 bytes) with key i's value.
func BenchValue(v []byte, i int) {
	var w [8]byte
	for j := 0; j < len(v); j += 8 {
		binary.LittleEndian.PutUint64(w[:], uint64(i)*0x9E3779B97F4A7C15+uint64(j))
		copy(v[j:], w[:])
	}
}

// BenchDataset writes (once, cached under the system temp dir) a source
// root holding db "bench", version "1": n records of 100-byte values in
// files uncompressed SequenceFiles. Sharded files each hold one
// partition in key order, as a Hadoop job writes them; otherwise records
// are dealt over the files in random order. It returns the root.
func BenchDataset(b testing.TB, n, files int, sharded bool) string {
	b.Helper()
	order := rand.New(rand.NewSource(42)).Perm(n)
	return benchDataset(b, fmt.Sprintf("spangle-bench-%d-%d-%v", n, files, sharded), versiontest.Options{Files: files}, func(f int) []int {
		var ids []int
		for _, i := range order {
			if (sharded && partitioner.Partition(BenchKey(i), files) == f) || (!sharded && i%files == f) {
				ids = append(ids, i)
			}
		}
		if sharded {
			// Keys are zero-padded, so numeric order is key order.
			slices.Sort(ids)
		}
		return ids
	})
}

// BenchSparkeyDataset is BenchDataset's keys and values as a Sparkey
// version of files partitions with Snappy blocks of 4 KiB (what
// libsparkey users write), generated once and kept in the temp dir.
func BenchSparkeyDataset(b testing.TB, n, files int) string {
	return BenchSparkeyDatasetOf(b, n, files, sparkey.Snappy)
}

// BenchSparkeyDatasetOf is BenchSparkeyDataset with logs of compression
// comp.
func BenchSparkeyDatasetOf(b testing.TB, n, files int, comp sparkey.Compression) string {
	b.Helper()
	o := versiontest.Options{Format: versiontest.Sparkey, Files: files, Sparkey: sparkey.WriterOptions{Compression: comp}}
	name := fmt.Sprintf("spangle-bench-sparkey-%d-%d", n, files)
	if comp != sparkey.Snappy {
		name += "-" + comp.String()
	}
	return benchDataset(b, name, o, func(f int) []int {
		var ids []int
		for i := 0; i < n; i++ {
			if partitioner.Partition(BenchKey(i), files) == f {
				ids = append(ids, i) // ascending i is ascending key
			}
		}
		return ids
	})
}

// benchDataset writes (once, cached as name under the system temp dir)
// db "bench", version "1", file f holding the keys ids(f) in order, and
// returns the root.
func benchDataset(b testing.TB, name string, o versiontest.Options, ids func(f int) []int) string {
	root := filepath.Join(os.TempDir(), name)
	if _, err := os.Stat(filepath.Join(root, "bench", "1", "_SUCCESS")); err == nil {
		return root
	}
	os.RemoveAll(root)
	_, err := versiontest.WriteFunc(root, "bench", "1", o, func(f int, put func(k, v []byte) error) error {
		val := make([]byte, 100)
		for _, i := range ids(f) {
			BenchValue(val, i)
			if err := put(BenchKey(i), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return root
}
