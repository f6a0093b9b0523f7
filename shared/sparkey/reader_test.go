package sparkey

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testdata = "../../testdata/sparkey"

// readPair reads every live pair of dir/base.spl with dir/base.spi.sz.
func readPair(t testing.TB, dir, base string) ([][2]string, error) {
	t.Helper()
	logPath := filepath.Join(dir, base+".spl")
	lf, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	fi, _ := lf.Stat()
	xf, err := os.Open(filepath.Join(dir, base+".spi.sz"))
	if err != nil {
		t.Fatal(err)
	}
	defer xf.Close()
	return readPairs(lf, fi.Size(), base+".spl", xf, base+".spi.sz")
}

func TestReadSequinsFiles(t *testing.T) {
	dir := filepath.Join(testdata, "sequins", "sparkeydb", "1")
	got := map[string]string{}
	for _, base := range []string{"part0-file0", "part0-file1", "part1"} {
		pairs, err := readPair(t, dir, base)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if base == "part1" && len(pairs) != 0 {
			t.Errorf("part1 holds %v, want nothing", pairs)
		}
		for _, p := range pairs {
			got[p[0]] = p[1]
		}
	}
	want := map[string]string{"Alice": "Practice", "Betty": "White", "Charlie": "Chaplin", "Dylan": "Thomas"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// expected reads the listed pairs of the libsparkey-written db.
func expected(t testing.TB) map[string]string {
	f, err := os.Open(filepath.Join(testdata, "libsparkey", "users-1.expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "\t")
		kb, err1 := hex.DecodeString(k)
		vb, err2 := hex.DecodeString(v)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		want[string(kb)] = string(vb)
	}
	return want
}

func TestReadLibsparkeyFiles(t *testing.T) {
	want := expected(t)
	if len(want) != 20000 {
		t.Fatalf("%d listed pairs, want 20000", len(want))
	}
	dir := filepath.Join(testdata, "libsparkey", "users", "1")
	got := map[string]string{}
	for i := 0; i < 4; i++ {
		base := "part-0000" + string(rune('0'+i))
		pairs, err := readPair(t, dir, base)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		var prev string
		for j, p := range pairs {
			if j > 0 && p[0] <= prev {
				t.Errorf("%s: key %q after %q: the log is not sorted", base, p[0], prev)
			}
			prev = p[0]
			if _, dup := got[p[0]]; dup {
				t.Errorf("key %q twice", p[0])
			}
			got[p[0]] = p[1]
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read %d pairs, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%q = %x, want %x", k, got[k], v)
		}
	}
}

func TestLogHeaderOfLibsparkeyFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "libsparkey", "users", "1", "part-00000.spl"))
	if err != nil {
		t.Fatal(err)
	}
	lr, err := NewLogReader(bytes.NewReader(b), "part-00000.spl", int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	h := lr.Header()
	if h.Compression != Snappy || h.BlockSize != 4096 || h.Deletes != 0 || h.Puts == 0 {
		t.Errorf("header %+v: want snappy blocks of 4096 bytes, puts and no deletes", h)
	}
	var n uint64
	for lr.Next() {
		n++
	}
	if lr.Err() != nil || n != h.Puts {
		t.Errorf("read %d entries (err %v), header says %d", n, lr.Err(), h.Puts)
	}
}

// TestBuffersReused reads pairs one after another with one Buffers, good
// ones between ones that fail at the index, at the log's header and in
// the middle of the log: each must read as it does with fresh memory.
func TestBuffersReused(t *testing.T) {
	big := strings.Repeat("v", 300)
	ops := []op{{key: "a", val: big}, {key: "b", val: "2"}, {key: "a", val: "1bis"}, {key: "c", val: big + "c"}, {key: "b", del: true}}
	type pair struct{ log, index []byte }
	var pairs []pair
	for i, comp := range []Compression{Snappy, None, Zstd, Zstd, Snappy, Zstd} {
		// The second zstd log has blocks of another size: its decoder
		// is not the first one's.
		bs := 64
		if i == 3 {
			bs = 128
		}
		log, index := write(t, WriterOptions{Compression: comp, BlockSize: bs}, ops)
		pairs = append(pairs, pair{log, index})
		switch comp {
		case None: // then the same with its index cut short
			pairs = append(pairs, pair{log, index[:len(index)/2]})
		case Zstd: // then the same with its log's header cut short
			if i == 2 {
				pairs = append(pairs, pair{log[:LogHeaderSize/2], index})
			}
		}
	}
	// A log whose last block is damaged: fails in Next.
	log, index := write(t, WriterOptions{Compression: Snappy, BlockSize: 64}, ops)
	bad := bytes.Clone(log)
	for i := len(bad) - 8; i < len(bad); i++ {
		bad[i] ^= 0xff
	}
	pairs = append(pairs, pair{bad, index}, pairs[0])

	var bufs Buffers
	fails := 0
	for i, p := range pairs {
		want, wantErr := readAll(p.log, p.index)
		var got [][2]string
		r, err := bufs.NewReader(bytes.NewReader(p.log), int64(len(p.log)), "test.spl", bytes.NewReader(p.index), "test.spi.sz")
		if err == nil {
			for r.Next() {
				got = append(got, [2]string{string(r.Key()), string(r.Value())})
			}
			err = r.Err()
			r.Close()
		}
		if (err == nil) != (wantErr == nil) || !slices.Equal(got, want) {
			t.Fatalf("pair %d: got %q, %v; fresh memory read %q, %v", i, got, err, want, wantErr)
		}
		if err != nil {
			mustCorrupt(t, fmt.Sprintf("pair %d", i), err)
			fails++
		}
	}
	if fails != 3 {
		t.Fatalf("%d pairs failed, want the 3 damaged ones", fails)
	}
}
