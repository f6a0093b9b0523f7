package table

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"

	"spangle/shared/partitioner"
	"spangle/shared/sparkey"
)

// sparkeyPartition writes the keys key-i (i < n) of partition p of parts
// with their values as an uncompressed Sparkey pair, deletes del, and
// places it in a new partition directory (with an empty LevelDB
// database, as a load leaves it). It returns the directory and the live
// keys.
func sparkeyPartition(t *testing.T, n, p, parts int, del string) (string, map[string]string) {
	t.Helper()
	src := t.TempDir()
	lf, err := os.Create(filepath.Join(src, "x.spl"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := sparkey.NewWriter(lf, sparkey.WriterOptions{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]string{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		if partitioner.Partition([]byte(k), parts) != p {
			continue
		}
		v := strings.Repeat(fmt.Sprint(i), 1+i%7)
		if err := w.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		live[k] = v
	}
	if del != "" {
		w.Delete([]byte(del))
		delete(live, del)
	}
	var framed bytes.Buffer
	if err := w.Close(&framed); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	dir := filepath.Join(t.TempDir(), "p")
	b, err := CreatePartition(dir, BuildOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	ix, err := io.ReadAll(snappy.NewReader(&framed))
	if err != nil {
		t.Fatal(err)
	}
	_, ixPath, _ := SparkeyPaths(dir, "pair")
	if err := os.WriteFile(ixPath, ix, 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(src, "x.spl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	files, err := PlaceSparkeyPair(dir, "pair", p, parts, bytes.NewReader(log), int64(len(log)), "src.spl", "src.spi.sz",
		func(key []byte, off int64) error {
			seen++
			if _, ok := live[string(key)]; !ok {
				t.Errorf("%q at %d is not live", key, off)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(live) || len(files) != 3 {
		t.Fatalf("%d keys checked, %d live; files %v", seen, len(live), files)
	}
	return dir, live
}

func TestSparkeyPartitionServesInPlace(t *testing.T) {
	dir, live := sparkeyPartition(t, 5000, 1, 3, "key-4")
	if _, ok := live["key-4"]; ok {
		t.Fatal("key-4 was deleted")
	}
	part, err := OpenPartition(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	buf := make([]byte, 0, 64)
	for k, v := range live {
		got, err := part.Get(buf[:0], []byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("%s = %q, %v; want %q", k, got, err, v)
		}
	}
	for _, k := range []string{"key-4", "absent", ""} {
		if _, err := part.Get(nil, []byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%q: %v, want ErrNotFound", k, err)
		}
	}
	var key string
	for k := range live {
		key = k
		break
	}
	kb := []byte(key)
	if n := testing.AllocsPerRun(200, func() { buf, _ = part.Get(buf[:0], kb) }); n != 0 {
		t.Fatalf("a hit allocates %v times", n)
	}
	if err := VerifyPartition(t.Context(), dir, nil); err != nil {
		t.Fatal(err)
	}
	paced := 0
	if err := VerifyPartition(t.Context(), dir, func(n int) error { paced += n; return nil }); err != nil || paced == 0 {
		t.Fatalf("paced %d bytes, %v", paced, err)
	}
}

// TestSparkeyPartitionCorruption damages a placed pair in each way a
// disk or a hand can: VerifyPartition (a scrub) finds each, as
// ErrCorrupt; an open finds what changes a size or a header.
func TestSparkeyPartitionCorruption(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		open   bool // OpenPartition still opens it
	}{
		{"a value byte flipped", func(t *testing.T, dir string) {
			logPath, _, _ := SparkeyPaths(dir, "pair")
			flip(t, logPath, -2)
		}, true},
		{"an index byte flipped", func(t *testing.T, dir string) {
			_, ixPath, _ := SparkeyPaths(dir, "pair")
			flip(t, ixPath, -1)
		}, true},
		{"the log truncated", func(t *testing.T, dir string) {
			logPath, _, _ := SparkeyPaths(dir, "pair")
			fi, _ := os.Stat(logPath)
			os.Truncate(logPath, fi.Size()-1)
		}, false},
		{"the sum file garbled", func(t *testing.T, dir string) {
			_, _, sum := SparkeyPaths(dir, "pair")
			os.WriteFile(sum, []byte("spangle-sparkey-pair 1\npartition x\n"), 0o644)
		}, false},
		{"the sum file of another partition", func(t *testing.T, dir string) {
			_, _, sum := SparkeyPaths(dir, "pair")
			b, _ := os.ReadFile(sum)
			os.WriteFile(sum, bytes.Replace(b, []byte("partition 1 3"), []byte("partition 2 3"), 1), 0o644)
		}, true},
		{"the index's header damaged", func(t *testing.T, dir string) {
			_, ixPath, sum := SparkeyPaths(dir, "pair")
			flip(t, ixPath, 12) // the file identifier
			// With the checksum updated: the structure is what fails.
			s, err := readSparkeySum(dir, "pair")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(ixPath)
			s.IndexCRC = crc32c(b)
			os.WriteFile(sum, s.marshal(), 0o644)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := sparkeyPartition(t, 2000, 1, 3, "")
			c.damage(t, dir)
			err := VerifyPartition(t.Context(), dir, nil)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("verify: %v, want ErrCorrupt naming %s", err, dir)
			}
			part, err := OpenPartition(dir, CacheOptions{})
			if c.open != (err == nil) {
				t.Fatalf("open: %v, want it to open: %v", err, c.open)
			}
			if err == nil {
				part.Close()
			}
		})
	}
}

func flip(t *testing.T, path string, at int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(b)
	}
	b[at] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func crc32c(b []byte) uint32 {
	var w crcWriter
	w.w = io.Discard
	w.Write(b)
	return w.crc
}

func TestSparkeySumRoundTrip(t *testing.T) {
	s := SparkeyPair{Base: "b", Partition: 3, Partitions: 8, LogSize: 1 << 40, IndexSize: 112, LogCRC: 0xdeadbeef, IndexCRC: 1}
	got, err := parseSparkeySum(s.marshal(), "b")
	if err != nil || got != s {
		t.Fatalf("%+v, %v; want %+v", got, err, s)
	}
}

// FuzzSparkeySum parses arbitrary bytes as a sum file: an error or a
// pair that writes back as the same bytes.
func FuzzSparkeySum(f *testing.F) {
	f.Add((&SparkeyPair{Partition: 1, Partitions: 2, LogSize: 100, IndexSize: 200, LogCRC: 3, IndexCRC: 4}).marshal())
	f.Add([]byte("spangle-sparkey-pair 1\npartition 0 1\nlog 84 00000000\nindex 112 ffffffff\n"))
	f.Add([]byte("spangle-sparkey-pair 1\npartition -1 1\nlog 84 0\nindex 112 ffffffff\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSparkeySum(b, "x")
		if err != nil {
			return
		}
		if s.Partition < 0 || s.Partition >= s.Partitions || s.LogSize < 0 || s.IndexSize < 0 {
			t.Fatalf("accepted %+v", s)
		}
		if again, err := parseSparkeySum(s.marshal(), "x"); err != nil || again != s {
			t.Fatalf("%+v does not round-trip: %+v, %v", s, again, err)
		}
	})
}
