package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/table"
)

// load loads root/db/version into a temp dir and returns the result and
// the opened partitions.
func load(t *testing.T, root, db, version string, held []int, opts Options) (Result, []*table.Partition, error) {
	t.Helper()
	src, files := testutil.OpenVersion(t, root, db, version)
	out := t.TempDir()
	dir := func(p int) string { return filepath.Join(out, fmt.Sprintf("p-%d", p)) }
	opts.Build.NoSync = true
	res, err := Load(context.Background(), Request{Source: src, DB: db, Version: version, Files: files, Held: held, Dir: dir}, opts)
	if err != nil {
		return res, nil, err
	}
	n, err := NumPartitions(files, opts.Formats)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([]*table.Partition, n)
	if held == nil {
		for p := range n {
			held = append(held, p)
		}
	}
	for _, p := range held {
		if parts[p], err = table.OpenPartition(dir(p), table.CacheOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { parts[p].Close() })
	}
	return res, parts, nil
}

func get(parts []*table.Partition, key []byte) ([]byte, error) {
	p := parts[partitioner.Partition(key, len(parts))]
	if p == nil {
		return nil, errors.New("not held")
	}
	return p.Get(nil, key)
}

func TestHealthyTestdataTakesFastPath(t *testing.T) {
	td := testutil.TestData(t)
	res, parts, err := load(t, filepath.Join(td, "healthy"), "baby-names", "1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 64 || res.FastFiles != 5 || res.Runs != 5 {
		t.Fatalf("result %+v, want 64 records over 5 fast files", res)
	}
	if v, err := get(parts, []byte("1881/boy")); err != nil || string(v) != "John" {
		t.Fatalf("1881/boy = %q, %v", v, err)
	}
	// Every record of every file is found in its partition.
	for i := 0; i < 5; i++ {
		f, err := os.Open(filepath.Join(td, "healthy", "baby-names", "1", fmt.Sprintf("part-%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		r, err := seqfile.NewReader(f, f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			if v, err := get(parts, r.Key()); err != nil || !bytes.Equal(v, r.Value()) {
				t.Fatalf("%q = %q, %v; want %q", r.Key(), v, err, r.Value())
			}
		}
		f.Close()
	}
}

func TestGeneralPathWithSpills(t *testing.T) {
	root := t.TempDir()
	recs := testutil.Records(5000, "v1")
	recs = append(recs, testutil.Record{Key: []byte("\x00\xff binary"), Value: nil},
		testutil.Record{Key: []byte("k"), Value: []byte{}})
	rand.New(rand.NewSource(1)).Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	testutil.WriteVersion(t, root, "db", "v1", 7, testutil.RoundRobin, seqfile.WriterOptions{Compression: seqfile.Block, Codec: seqfile.SnappyCodec}, recs)
	res, parts, err := load(t, root, "db", "v1", nil, Options{SpillBytes: 32 << 10, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != int64(len(recs)) || res.FastFiles != 0 || res.Runs <= 7 {
		t.Fatalf("result %+v: want every record, no fast file, several spills", res)
	}
	for _, r := range recs {
		if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
			t.Fatalf("%q = %q, %v; want %q", r.Key, v, err, r.Value)
		}
	}
	if _, err := get(parts, []byte("missing")); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

func TestFileThatStopsBeingSharded(t *testing.T) {
	// part-00000 starts as a sorted run of one partition, then holds keys
	// of others and goes back in order: the loader must notice both.
	root := t.TempDir()
	const n = 4
	recs := testutil.Records(2000, "v1")
	testutil.WriteVersion(t, root, "db", "v1", n, testutil.Sharded, seqfile.WriterOptions{}, recs)
	var first, rest []testutil.Record
	for _, r := range recs {
		if partitioner.Partition(r.Key, n) == 0 {
			first = append(first, r)
		} else if len(rest) < 300 {
			rest = append(rest, r)
		}
	}
	mixed := append(append([]testutil.Record{}, first[:len(first)/2]...), rest...)
	mixed = append(mixed, first[:10]...) // out of order, own partition
	mixed = append(mixed, first[len(first)/2:]...)
	testutil.WriteFile(t, filepath.Join(root, "db", "v1", "part-00000"), seqfile.WriterOptions{}, mixed)
	res, parts, err := load(t, root, "db", "v1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FastFiles != n-1 {
		t.Fatalf("result %+v, want %d fast files", res, n-1)
	}
	for _, r := range recs {
		if v, err := get(parts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
			t.Fatalf("%q = %q, %v", r.Key, v, err)
		}
	}
}

func TestHeldPartitionsOnly(t *testing.T) {
	root := t.TempDir()
	recs := testutil.Records(1000, "v1")
	testutil.WriteVersion(t, root, "db", "v1", 5, testutil.RoundRobin, seqfile.WriterOptions{}, recs)
	_, parts, err := load(t, root, "db", "v1", []int{1, 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		p := partitioner.Partition(r.Key, 5)
		v, err := get(parts, r.Key)
		if (p == 1 || p == 3) != (err == nil) || (err == nil && !bytes.Equal(v, r.Value)) {
			t.Fatalf("%q (partition %d) = %q, %v", r.Key, p, v, err)
		}
	}
}

func TestCorruptFilesFailWithFileAndOffset(t *testing.T) {
	td := testutil.TestData(t)
	_, _, err := load(t, filepath.Join(td, "unhealthy"), "baby-names-bad", "1", nil, Options{})
	if !errors.Is(err, seqfile.ErrCorrupt) || !strings.Contains(err.Error(), "baby-names-bad/1/part-00000") {
		t.Fatalf("unhealthy load: %v", err)
	}

	root := t.TempDir()
	dir := testutil.WriteVersion(t, root, "db", "v1", 3, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(3000, "v1"))
	path := filepath.Join(dir, "part-00001")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)*2/3], 0o644)
	_, _, err = load(t, root, "db", "v1", nil, Options{})
	var ce *seqfile.CorruptError
	if !errors.As(err, &ce) || ce.Offset <= 0 || !strings.Contains(err.Error(), "part-00001") {
		t.Fatalf("truncated load: %v", err)
	}
}

func TestNoFiles(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "db", "v1"), 0o755)
	if _, _, err := load(t, root, "db", "v1", nil, Options{}); !errors.Is(err, ErrNoFiles) {
		t.Fatalf("empty version: %v", err)
	}
}

func TestCancel(t *testing.T) {
	root := t.TempDir()
	testutil.WriteVersion(t, root, "db", "v1", 2, testutil.RoundRobin, seqfile.WriterOptions{}, testutil.Records(20000, "v1"))
	src, _ := source.Open(root, source.Options{})
	files, _ := src.Files(context.Background(), "db", "v1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := t.TempDir()
	_, err := Load(ctx, Request{Source: src, DB: "db", Version: "v1", Files: files,
		Dir: func(p int) string { return filepath.Join(out, fmt.Sprint(p)) }}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled load: %v", err)
	}
}
