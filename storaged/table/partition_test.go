package table

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"

	"spangle/storaged/blockcache"
)

func buildRun(t *testing.T, b *PartitionBuilder, kv map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w, err := b.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := w.Append([]byte(k), []byte(kv[k])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{BlockSize: 256, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	run1 := map[string]string{"": "empty key", "a": "", "b\x00\xff": "binary\x00", "zzz": "last"}
	run2 := map[string]string{"a\x00": "prefix", "m": "middle"}
	for i := 0; i < 500; i++ {
		run2[fmt.Sprintf("key-%04d", i)] = fmt.Sprintf("value-%d", i)
	}
	buildRun(t, b, run1)
	buildRun(t, b, run2)
	buildRun(t, b, nil) // an empty run leaves nothing
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPartition(dir, CacheOptions{Blocks: blockcache.New(1 << 16)})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []map[string]string{run1, run2} {
		for k, want := range run {
			got, err := p.Get(nil, []byte(k))
			if err != nil || !bytes.Equal(got, []byte(want)) {
				t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, want)
			}
		}
	}
	for _, k := range []string{"a\x00\x00", "b", "zzzz", "key-"} {
		if _, err := p.Get(nil, []byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %v, want ErrNotFound", k, err)
		}
	}
	p.Close()

	// It is a real LevelDB database: a writable open iterates every key
	// in order.
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	it := db.NewIterator(nil, nil)
	n := 0
	var prev []byte
	for it.Next() {
		if n > 0 && bytes.Compare(prev, it.Key()) >= 0 {
			t.Fatalf("iteration out of order: %q then %q", prev, it.Key())
		}
		prev = append(prev[:0], it.Key()...)
		n++
	}
	it.Release()
	if n != len(run1)+len(run2) {
		t.Fatalf("iterated %d keys, want %d", n, len(run1)+len(run2))
	}
}

func TestEmptyPartitionAndOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := b.NewRun()
	if err := w.Append([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Append([]byte("a"), nil); !errors.Is(err, ErrOrder) {
		t.Fatalf("out of order append: %v", err)
	}
	w.Abort()
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Get(nil, []byte("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("aborted run is visible: %v", err)
	}
}
