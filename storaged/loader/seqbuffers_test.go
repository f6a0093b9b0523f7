package loader

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/storaged/table"
)

// TestSeqBuffersHandedOn: files read one after another decode into the
// buffers the one before grew (the second Reader gets the first's), and a
// load of block-compressed files whose values differ in size from file
// to file, read one at a time, still serves every value as written.
func TestSeqBuffersHandedOn(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "db", "1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 3
	want := map[string]string{}
	for f := 0; f < files; f++ {
		var buf bytes.Buffer
		w, err := seqfile.NewWriter(&buf, seqfile.WriterOptions{Compression: seqfile.Block, Codec: seqfile.SnappyCodec, BlockSize: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		// File 0 has the longest values: a later file decoding into its
		// buffers finds them longer than its own and full of its bytes.
		for i := 0; i < 3000; i++ {
			k := fmt.Sprintf("key-%05d", i)
			if partitioner.Partition([]byte(k), files) != f {
				continue
			}
			v := strings.Repeat(string(rune('a'+f)), 300/(f+1)) + k
			want[k] = v
			if err := w.Append([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%05d", f)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := src.Files(context.Background(), "db", "1")
	if err != nil {
		t.Fatal(err)
	}

	in := Input{src: src, db: "db", version: "1", seq: newSeqBuffers(1)}
	var lent []*seqfile.Buffers
	for _, f := range fs[:2] {
		r, err := SequenceFileFormat{}.Open(context.Background(), Unit{Files: []source.File{f}, Partition: -1}, in)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
		}
		lent = append(lent, r.(seqRecords).b)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if lent[0] == nil || lent[1] != lent[0] {
		t.Fatalf("the second file's Reader got buffers %p, the first's were %p", lent[1], lent[0])
	}

	pdir := func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }
	res, err := Load(context.Background(), Request{Source: src, DB: "db", Version: "1", Files: fs, Dir: pdir},
		Options{Parallel: 1, Build: table.BuildOptions{NoSync: true}})
	if err != nil || res.Records != int64(len(want)) {
		t.Fatalf("load: %+v, %v", res, err)
	}
	for p := 0; p < files; p++ {
		part, err := table.OpenPartition(pdir(p), table.CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer part.Close()
		for k, v := range want {
			if partitioner.Partition([]byte(k), files) != p {
				continue
			}
			got, err := part.Get(nil, []byte(k))
			if err != nil || string(got) != v {
				t.Fatalf("partition %d, %s: %q, %v; want %q", p, k, got, err, v)
			}
		}
	}
}

// TestEachParallel: every index once, every error returned.
func TestEachParallel(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 64} {
		calls := make([]atomic.Int32, n)
		err := eachParallel(n, func(i int) error {
			calls[i].Add(1)
			if i%3 == 1 {
				return fmt.Errorf("error %d", i)
			}
			return nil
		})
		got := map[string]bool{}
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				got[l] = true
			}
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n %d: index %d called %d times", n, i, c)
			}
			if want := i%3 == 1; want != got[fmt.Sprintf("error %d", i)] {
				t.Errorf("n %d: error of %d returned %v, want %v (%v)", n, i, !want, want, err)
			}
		}
	}
}
