package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// dataBlocks writes keys (sorted here) as one table of small blocks and
// returns its raw data blocks.
func dataBlocks(t *testing.T, keys [][]byte, restartInterval int) [][]byte {
	t.Helper()
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	dir := filepath.Join(t.TempDir(), "p-0")
	b, err := CreatePartition(dir, BuildOptions{BlockSize: 256, RestartInterval: restartInterval, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.NewRun()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if err := w.Append(k, fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	path := onlyTable(t, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := openTable(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.close()
	var blocks [][]byte
	for _, bh := range tb.handles {
		blocks = append(blocks, data[bh.offset:bh.offset+bh.size])
	}
	return blocks
}

// cachedForm is block with its digest, in a buffer of its own.
func cachedForm(block []byte) []byte {
	c := make([]byte, len(block), len(block)+digestLen(block))
	copy(c, block)
	return appendDigest(c)
}

// probes are the keys worth asking a block for: each key it holds, just
// above and below each, their prefixes, and keys outside its range.
func probes(keys [][]byte) [][]byte {
	out := [][]byte{nil, {0}, {0xff}, bytes.Repeat([]byte{0xff}, 40)}
	for _, k := range keys {
		out = append(out, k, append(bytes.Clone(k), 0), append(bytes.Clone(k), 0xff))
		for n := 0; n < len(k); n++ {
			out = append(out, k[:n])
		}
		if n := len(k); n > 0 {
			below := bytes.Clone(k)
			below[n-1]--
			above := bytes.Clone(k)
			above[n-1]++
			out = append(out, below, above)
		}
	}
	return out
}

// TestSeekCachedAgreesWithSeekBlock: for blocks of keys shaped every way
// that matters to the digest (a long shared prefix beyond what it keeps,
// keys shorter than the prefix it compares, zero bytes, equal prefixes),
// the digest's search answers exactly as the plain search.
func TestSeekCachedAgreesWithSeekBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	randomKey := func(alphabet string, minLen, maxLen int) []byte {
		k := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	sets := map[string][][]byte{}
	for i := 0; i < 300; i++ {
		sets["numbered"] = append(sets["numbered"], fmt.Appendf(nil, "key-%010d", i*7))
		sets["long shared prefix"] = append(sets["long shared prefix"], fmt.Appendf(nil, "tenant/region/bucket/object-%05d", i))
		sets["short binary"] = append(sets["short binary"], randomKey("\x00\x01\xff", 0, 4))
		sets["binary"] = append(sets["binary"], randomKey("\x00\x01\x02\x7f\x80\xfe\xff", 1, 24))
		sets["equal 8-byte prefixes"] = append(sets["equal 8-byte prefixes"], append([]byte("same8byt"), randomKey("ab\x00", 0, 3)...))
	}
	for name, keys := range sets {
		for _, interval := range []int{1, 4, 16} {
			blocks := dataBlocks(t, keys, interval)
			asked := probes(keys)
			for bi, block := range blocks {
				c := cachedForm(block)
				if c[len(c)-6] == 0 && c[len(c)-5] == 0 {
					t.Fatalf("%s: block %d got no digest", name, bi)
				}
				for _, key := range asked {
					v1, k1, f1, e1 := seekBlock(block, key)
					v2, k2, f2, e2 := seekCached(c, key)
					if !bytes.Equal(v1, v2) || k1 != k2 || f1 != f2 || (e1 == nil) != (e2 == nil) {
						t.Fatalf("%s, restart interval %d, block %d, key %q: seekBlock (%q %d %v %v), seekCached (%q %d %v %v)",
							name, interval, bi, key, v1, k1, f1, e1, v2, k2, f2, e2)
					}
				}
			}
		}
	}
}

// rawBlock lays out a data block of keys in the order given, each entry
// a restart point: a block no table writer would make when the keys are
// out of order.
func rawBlock(keys ...string) []byte {
	var b []byte
	var restarts []uint32
	for _, k := range keys {
		restarts = append(restarts, uint32(len(b)))
		b = binary.AppendUvarint(b, 0)
		b = binary.AppendUvarint(b, uint64(len(k)+len(trailer)))
		b = binary.AppendUvarint(b, 1)
		b = append(append(append(b, k...), trailer[:]...), 'v')
	}
	for _, r := range restarts {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(len(restarts)))
}

// Restart keys out of order get no digest, even where the first and last
// agree on a prefix that a key between them is shorter than.
func TestDigestOfKeysOutOfOrder(t *testing.T) {
	for _, keys := range [][]string{{"aaaa", "ab", "aaaz"}, {"aaaa", "a", "aaaz"}, {"b", "a"}} {
		block := rawBlock(keys...)
		c := cachedForm(block)
		if n := binary.LittleEndian.Uint16(c[len(c)-6:]); n != 0 {
			t.Errorf("%q: digest of %d restarts, want none", keys, n)
		}
		for _, k := range append(keys, "", "aaab", "zz") {
			v1, _, f1, e1 := seekBlock(block, []byte(k))
			v2, _, f2, e2 := seekCached(c, []byte(k))
			if !bytes.Equal(v1, v2) || f1 != f2 || (e1 == nil) != (e2 == nil) {
				t.Errorf("%q, key %q: seekBlock (%q %v %v), seekCached (%q %v %v)", keys, k, v1, f1, e1, v2, f2, e2)
			}
		}
	}
}

// A block that does not parse is cached with an empty digest and searched
// as seekBlock searches it: the same error.
func TestSeekCachedWithoutDigest(t *testing.T) {
	bad := []byte{1, 2, 3, 0xff, 0xff, 0xff, 0x7f}
	c := cachedForm(bad)
	_, _, _, e1 := seekBlock(bad, []byte("k"))
	_, _, _, e2 := seekCached(c, []byte("k"))
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Fatalf("seekBlock error %v, seekCached error %v", e1, e2)
	}
	if _, _, _, err := seekCached([]byte{1, 2}, nil); err == nil {
		t.Fatal("a buffer shorter than a digest's tail must be an error")
	}
}
