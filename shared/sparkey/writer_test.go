package sparkey

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func sortedOps(n int, valSize int) []op {
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{key: fmt.Sprintf("key-%07d", i), val: strings.Repeat(string(rune('a'+i%26)), valSize+i%7)}
	}
	return ops
}

// lookup finds key the way libsparkey does: from the key's wanted slot,
// probing until a slot's displacement is smaller than the distance
// walked. It proves the written table is usable for lookups.
func lookup(t *testing.T, log, index []byte, key string) (string, bool) {
	t.Helper()
	ir, err := NewFramedIndexReader(bytes.NewReader(index), "x")
	if err != nil {
		t.Fatal(err)
	}
	h := ir.Header()
	type cell struct{ hash, addr uint64 }
	var table []cell
	for s := uint64(0); s < h.Capacity; s++ {
		table = append(table, cell{})
	}
	// Re-read the raw table: Next skips empty slots.
	raw, _ := io.ReadAll(snappyReader(index))
	ss := uint64(h.SlotSize())
	for s := range table {
		b := raw[IndexHeaderSize+uint64(s)*ss:]
		if h.HashSize == 4 {
			table[s].hash = uint64(leU32(b))
		} else {
			table[s].hash = leU64(b)
		}
		if h.AddressSize == 4 {
			table[s].addr = uint64(leU32(b[h.HashSize:]))
		} else {
			table[s].addr = leU64(b[h.HashSize:])
		}
	}
	var hash uint64
	if h.HashSize == 4 {
		hash = uint64(Murmur32([]byte(key), h.Seed))
	} else {
		hash = Murmur64([]byte(key), h.Seed)
	}
	addrs := map[uint64][2]string{}
	lr, _ := NewLogReader(bytes.NewReader(log), "x", int64(len(log)))
	for lr.Next() {
		if !lr.Deleted() {
			addrs[lr.Address(h.EntryBlockBits)] = [2]string{string(lr.Key()), string(lr.Value())}
		}
	}
	slot := hash % h.Capacity
	for d := uint64(0); d <= h.MaxDisplacement; d++ {
		c := table[slot]
		if c.addr == 0 {
			return "", false
		}
		if (slot+h.Capacity-c.hash%h.Capacity)%h.Capacity < d {
			return "", false
		}
		if c.hash == hash {
			if kv := addrs[c.addr]; kv[0] == key {
				return kv[1], true
			}
		}
		slot = (slot + 1) % h.Capacity
	}
	return "", false
}

func TestWriterRoundTrip(t *testing.T) {
	big := strings.Repeat("0123456789", 2000) // spans several 4 KiB blocks
	for _, c := range []struct {
		name string
		opts WriterOptions
		ops  []op
	}{
		{"empty", WriterOptions{}, nil},
		{"plain", WriterOptions{}, sortedOps(3000, 20)},
		{"snappy", WriterOptions{Compression: Snappy}, sortedOps(3000, 20)},
		{"zstd", WriterOptions{Compression: Zstd, BlockSize: 1024}, sortedOps(3000, 20)},
		{"hash8", WriterOptions{Compression: Snappy, HashSize: 8}, sortedOps(500, 5)},
		{"spanning", WriterOptions{Compression: Snappy, BlockSize: 64}, []op{
			{key: "a", val: big}, {key: "b", val: "x"}, {key: strings.Repeat("k", 300), val: big}, {key: "c", val: ""}}},
		{"empty key and value", WriterOptions{}, []op{{key: "", val: ""}, {key: "z", val: ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log, index := write(t, c.opts, c.ops)
			got, err := readAll(log, index)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.ops) {
				t.Fatalf("read %d pairs, wrote %d", len(got), len(c.ops))
			}
			for i, o := range c.ops {
				if got[i] != [2]string{o.key, o.val} {
					t.Fatalf("pair %d = %.40q, want %.40q", i, got[i], [2]string{o.key, o.val})
				}
			}
			for _, i := range []int{0, len(c.ops) / 2, len(c.ops) - 1} {
				if i < 0 || len(c.ops) == 0 {
					continue
				}
				if v, ok := lookup(t, log, index, c.ops[i].key); !ok || v != c.ops[i].val {
					t.Errorf("lookup of %.20q: %v %.20q", c.ops[i].key, ok, v)
				}
			}
			if _, ok := lookup(t, log, index, "absent"); ok && len(c.ops) > 0 {
				t.Error("found a key never written")
			}
		})
	}
}

func TestDeletesAndOverwrites(t *testing.T) {
	for _, comp := range []Compression{None, Snappy, Zstd} {
		t.Run(comp.String(), func(t *testing.T) {
			ops := []op{{key: "a", val: "1"}, {key: "b", val: "2"}, {key: "c", val: "3"},
				{key: "b", del: true}, {key: "a", val: "1bis"}, {key: "d", val: "4"}, {key: "d", del: true}, {key: "e", val: "5"}}
			log, index := write(t, WriterOptions{Compression: comp, BlockSize: 64}, ops)
			got, err := readAll(log, index)
			if err != nil {
				t.Fatal(err)
			}
			want := [][2]string{{"c", "3"}, {"a", "1bis"}, {"e", "5"}}
			if !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}
