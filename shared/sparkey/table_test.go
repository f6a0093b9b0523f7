package sparkey

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// plainIndex is the uncompressed bytes of a framed index.
func plainIndex(t testing.TB, framed []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := b.ReadFrom(snappyReader(framed)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTableGet(t *testing.T) {
	for _, hs := range []int{4, 8} {
		t.Run(fmt.Sprint("hash", hs), func(t *testing.T) {
			var ops []op
			for i := 0; i < 3000; i++ {
				ops = append(ops, op{key: fmt.Sprintf("key-%d", i), val: fmt.Sprintf("value-%d", i)})
			}
			ops = append(ops, op{key: "key-7", del: true}, op{key: "key-8", val: "again"}, op{key: "", val: "empty key"})
			log, framed := write(t, WriterOptions{Seed: 3, HashSize: hs}, ops)
			tb, err := OpenTable(log, "t.spl", plainIndex(t, framed), "t.spi")
			if err != nil {
				t.Fatal(err)
			}
			live := map[string]bool{}
			if err := tb.Walk(func(key []byte, off int64) error {
				if live[string(key)] {
					t.Errorf("key %q walked twice", key)
				}
				live[string(key)] = true
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := streamCheck(log, plainIndex(t, framed)); err != nil {
				t.Fatal(err)
			}
			if len(live) != 3000 || live["key-7"] {
				t.Fatalf("walked %d live keys (key-7 among them: %v), want 3000 without key-7", len(live), live["key-7"])
			}
			buf := make([]byte, 0, 64)
			for i := 0; i < 3000; i++ {
				want, found := fmt.Sprintf("value-%d", i), true
				switch i {
				case 7:
					found = false
				case 8:
					want = "again"
				}
				v, ok, err := tb.Get(buf[:0], []byte(fmt.Sprintf("key-%d", i)))
				if err != nil || ok != found || (found && string(v) != want) {
					t.Fatalf("key-%d: %q %v %v, want %q %v", i, v, ok, err, want, found)
				}
			}
			if v, ok, err := tb.Get(nil, nil); !ok || err != nil || string(v) != "empty key" {
				t.Fatalf("empty key: %q %v %v", v, ok, err)
			}
			if _, ok, err := tb.Get(nil, []byte("absent")); ok || err != nil {
				t.Fatalf("absent key: %v %v", ok, err)
			}
			key := []byte("key-42")
			if n := testing.AllocsPerRun(100, func() { buf, _, _ = tb.Get(buf[:0], key) }); n != 0 {
				t.Fatalf("a hit allocates %v times", n)
			}
		})
	}
}

func TestTableRefusesBadFiles(t *testing.T) {
	var ops []op
	for i := 0; i < 20; i++ {
		ops = append(ops, op{key: fmt.Sprint("k", i), val: fmt.Sprint(i)})
	}
	ops = append(ops, op{key: "k0", val: "again"}) // a put more than the live entries
	log, framed := write(t, WriterOptions{Seed: 5}, ops)
	index := plainIndex(t, framed)
	snappyLog, snappyIndex := write(t, WriterOptions{Compression: Snappy, Seed: 5}, ops)
	other, otherIndex := write(t, WriterOptions{Seed: 5, FileID: 77}, ops)
	ss := int(leU32(index[72:]) + leU32(index[68:]))
	capacity := int(leU64(index[76:]))
	occupied := func(ix []byte) []int {
		var out []int
		for i := 0; i < capacity; i++ {
			if leU32(ix[IndexHeaderSize+i*ss+4:]) != 0 {
				out = append(out, i)
			}
		}
		return out
	}
	mod := func(b []byte, f func(b []byte)) []byte {
		b = bytes.Clone(b)
		f(b)
		return b
	}
	occ := occupied(index)
	for _, c := range []struct {
		name       string
		log, index []byte
		open       bool // OpenTable accepts it; Check must not
	}{
		{"truncated log", log[:len(log)-1], index, false},
		{"truncated index", log, index[:len(index)-1], false},
		{"index longer than its slots", log, append(bytes.Clone(index), 0), false},
		{"snappy log", snappyLog, plainIndex(t, snappyIndex), false},
		{"index of another log", log, plainIndex(t, otherIndex), false},
		{"log of another index", other, index, false},
		{"slot emptied", log, mod(index, func(b []byte) {
			binary.LittleEndian.PutUint32(b[IndexHeaderSize+occ[0]*ss+4:], 0)
		}), true},
		{"slot moved away from its home", log, mod(index, func(b []byte) {
			// Move a slot's content to the slot before its home, which
			// is empty: a displacement of capacity-1 past an empty slot.
			for _, i := range occ {
				src := IndexHeaderSize + i*ss
				home := int(leU32(b[src:])) % capacity
				dst := IndexHeaderSize + ((home+capacity-1)%capacity)*ss
				if home == i && leU32(b[dst+4:]) == 0 {
					copy(b[dst:dst+ss], b[src:src+ss])
					clear(b[src : src+ss])
					return
				}
			}
			t.Fatal("no slot to move")
		}), true},
		{"two slots, one key", log, mod(index, func(b []byte) {
			// A second slot right after the first with the same content.
			for _, i := range occ {
				next := IndexHeaderSize + ((i+1)%capacity)*ss
				if leU32(b[next+4:]) == 0 {
					copy(b[next:next+ss], b[IndexHeaderSize+i*ss:IndexHeaderSize+(i+1)*ss])
					binary.LittleEndian.PutUint64(b[60:], leU64(b[60:])+1)
					return
				}
			}
			t.Fatal("no slot free after an occupied one")
		}), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, err := OpenTable(c.log, "t.spl", c.index, "t.spi")
			if !c.open {
				mustCorrupt(t, c.name, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustCorrupt(t, c.name, tb.Walk(func([]byte, int64) error { return nil }))
			mustCorrupt(t, c.name+", streamed", streamCheck(c.log, c.index))
		})
	}
}

// FuzzTable opens arbitrary bytes as an uncompressed log and index, looks
// keys up and checks the table: CorruptErrors only, no panic, and a
// table that passes Check finds every key its index names.
func FuzzTable(f *testing.F) {
	log, framed := write(f, WriterOptions{Seed: 7, FileID: 9}, []op{{key: "a", val: "1"}, {key: "b", val: "2"}, {key: "a", val: "3"}, {key: "b", del: true}})
	index := plainIndex(f, framed)
	f.Add(log, index, []byte("a"))
	f.Add(log, index, []byte("b"))
	log8, framed8 := write(f, WriterOptions{HashSize: 8}, []op{{key: "x", val: "yy"}, {key: "", val: ""}})
	f.Add(log8, plainIndex(f, framed8), []byte(""))
	f.Fuzz(func(t *testing.T, log, index, key []byte) {
		tb, err := OpenTable(log, "fuzz.spl", index, "fuzz.spi")
		if err != nil {
			checkFuzzErr(t, err)
			return
		}
		if _, _, err := tb.Get(nil, key); err != nil {
			checkFuzzErr(t, err)
		}
		walkErr := tb.Walk(func([]byte, int64) error { return nil })
		if streamErr := streamCheck(log, index); (walkErr == nil) != (streamErr == nil) {
			t.Fatalf("Walk: %v; IndexCheck: %v", walkErr, streamErr)
		} else if streamErr != nil {
			checkFuzzErr(t, streamErr)
		}
		if walkErr != nil {
			checkFuzzErr(t, walkErr)
			return
		}
		for i := uint64(0); i < tb.ih.Capacity; i++ {
			_, addr := tb.slot(i)
			if addr == 0 {
				continue
			}
			k, v, err := tb.entry(addr)
			if err != nil {
				t.Fatalf("slot %d passed Walk but names no put: %v", i, err)
			}
			got, ok, err := tb.Get(nil, k)
			if err != nil || !ok || !bytes.Equal(got, v) {
				t.Fatalf("slot %d: key %q not found (%q %v %v)", i, k, got, ok, err)
			}
		}
	})
}

// streamCheck checks log against index as a copy does: through a
// LogReader and an IndexCheck.
func streamCheck(log, index []byte) error {
	lr, err := NewLogReader(bytes.NewReader(log), "fuzz.spl", int64(len(log)))
	if err != nil {
		return err
	}
	defer lr.Close()
	c, err := NewIndexCheck(lr.Header(), "fuzz.spl", index, "fuzz.spi")
	if err != nil {
		return err
	}
	for lr.Next() {
		if !lr.Deleted() {
			c.Put(lr.Key(), lr.Offset())
		}
	}
	if err := lr.Err(); err != nil {
		return err
	}
	return c.Finish(log)
}

func TestTableHomeIsModulo(t *testing.T) {
	for _, c := range []uint64{1, 2, 3, 7, 1000, 1<<20 + 7, 1<<32 - 1} {
		tb := &Table{ih: IndexHeader{Capacity: c, HashSize: 4}}
		tb.fastM = ^uint64(0)/c + 1
		for _, h := range []uint64{0, 1, c - 1, c, c + 1, 1<<32 - 1, 123456789, 0xdeadbeef} {
			if got := tb.home(h); got != h%c {
				t.Fatalf("home(%d) with capacity %d = %d, want %d", h, c, got, h%c)
			}
		}
	}
}

// BenchmarkIndexCheck checks a 125k-key index and streams its log past
// it, as placing a pair does (per key).
func BenchmarkIndexCheck(b *testing.B) {
	var ops []op
	for i := 0; i < 125_000; i++ {
		ops = append(ops, op{key: fmt.Sprintf("key-%010d", i), val: "v"})
	}
	log, framed := write(b, WriterOptions{}, ops)
	index := plainIndex(b, framed)
	b.ResetTimer()
	for b.Loop() {
		if err := streamCheck(log, index); err != nil {
			b.Fatal(err)
		}
	}
}
