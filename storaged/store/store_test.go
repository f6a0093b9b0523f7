package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"

	"spangle/shared/source"
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

func TestManifest(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadManifest("db", "v1"); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("missing manifest: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	files := []source.File{{Name: "part-0", Size: 10, ModTime: now}, {Name: "part-1", Size: 20, ModTime: now}}
	m := Manifest{DB: "db", Version: "v1", NumPartitions: 2, Partitions: []int{0, 1}, Files: files, Complete: true}
	if err := s.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadManifest("db", "v1")
	if err != nil || !got.Matches(files, []int{0, 1}) {
		t.Fatalf("ReadManifest = %+v, %v", got, err)
	}
	changed := append([]source.File(nil), files...)
	changed[1].Size++
	if got.Matches(changed, []int{0, 1}) || got.Matches(files[:1], nil) || got.Matches(files, []int{2}) {
		t.Fatal("Matches accepts a different source")
	}
	got.Complete = false
	if got.Matches(files, nil) {
		t.Fatal("Matches accepts an incomplete version")
	}
	list, _ := s.List()
	if len(list["db"]) != 1 {
		t.Fatalf("List = %v", list)
	}
	if err := s.Remove("db", "v1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("List after Remove = %v", list)
	}
	if err := s.Remove("..", "x"); err == nil {
		t.Fatal("Remove accepted a path")
	}
	id1, err := s.NodeID()
	id2, _ := s.NodeID()
	if err != nil || id1 == "" || id1 != id2 {
		t.Fatalf("NodeID = %q, %q, %v", id1, id2, err)
	}
}

// A db's dir removed with its last version while the store is listed
// (Remove runs beside the manager's clean-up of stray versions) is simply
// not listed: the listing does not fail, which would leave every stray
// version on disk.
func TestListWhileADBIsRemoved(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.VersionDir("kept", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.MkdirAll(s.VersionDir("churn", "v1"), 0o755)
			s.Remove("churn", "v1")
		}
	}()
	defer func() { close(stop); <-done }()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		got, err := s.List()
		if err != nil {
			t.Fatalf("List while a db is removed: %v", err)
		}
		if len(got["kept"]) != 1 {
			t.Fatalf("List lost db kept: %v", got)
		}
	}
}
