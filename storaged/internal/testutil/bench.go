package testutil

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"spangle/shared/hashring"
	"spangle/shared/seqfile"
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
	root := filepath.Join(os.TempDir(), fmt.Sprintf("spangle-bench-%d-%d-%v", n, files, sharded))
	dir := filepath.Join(root, "bench", "1")
	if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); err == nil {
		return root
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	order := rand.New(rand.NewSource(42)).Perm(n)
	val := make([]byte, 100)
	for f := 0; f < files; f++ {
		var ids []int
		for _, i := range order {
			if (sharded && hashring.Partition(BenchKey(i), files) == f) || (!sharded && i%files == f) {
				ids = append(ids, i)
			}
		}
		if sharded {
			// Keys are zero-padded, so numeric order is key order.
			slices.Sort(ids)
		}
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%05d", f)))
		if err != nil {
			b.Fatal(err)
		}
		w, err := seqfile.NewWriter(out, seqfile.WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, i := range ids {
			BenchValue(val, i)
			if err := w.Append(BenchKey(i), val); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return root
}
