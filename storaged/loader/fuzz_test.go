package loader

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// FuzzLoadFile loads arbitrary bytes as a one-file version (and the same
// file twice, as a two-partition version): the load must fail cleanly or
// serve exactly what a reader of the file sees.
func FuzzLoadFile(f *testing.F) {
	td := testutil.TestData(f)
	for _, dir := range []string{filepath.Join(td, "codecs"), filepath.Join(td, "healthy", "baby-names", "1")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("SEQ\x06"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		root, out := t.TempDir(), t.TempDir()
		for _, n := range []int{1, 2} {
			v := fmt.Sprintf("v%d", n)
			dir := filepath.Join(root, "db", v)
			os.MkdirAll(dir, 0o755)
			for i := 0; i < n; i++ {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d", i)), data, 0o644)
			}
			src, _ := source.Open(root, source.Options{})
			files, _ := src.Files(context.Background(), "db", v)
			pdir := func(p int) string { return filepath.Join(out, v, fmt.Sprint(p)) }
			_, err := Load(context.Background(), Request{Source: src, DB: "db", Version: v, Files: files, Dir: pdir},
				Options{SpillBytes: 64 << 10, Build: table.BuildOptions{NoSync: true}})
			if err != nil {
				continue
			}
			parts := make([]*table.Partition, n)
			for p := range parts {
				if parts[p], err = table.OpenPartition(pdir(p), table.CacheOptions{}); err != nil {
					t.Fatalf("loaded partition does not open: %v", err)
				}
				defer parts[p].Close()
			}
			r, err := seqfile.NewReader(bytes.NewReader(data), "fuzz")
			if err != nil {
				t.Fatalf("load succeeded on a file the reader rejects: %v", err)
			}
			last := map[string][]byte{}
			for r.Next() {
				last[string(r.Key())] = append([]byte(nil), r.Value()...)
			}
			if r.Err() != nil {
				t.Fatalf("load succeeded on a corrupt file: %v", r.Err())
			}
			for k := range last {
				if _, err := parts[partitioner.Partition([]byte(k), n)].Get(nil, []byte(k)); err != nil {
					t.Fatalf("key %q lost: %v", k, err)
				}
			}
		}
	})
}
