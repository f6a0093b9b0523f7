package seqfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// maxReadAlloc bounds what reading one small corrupt file may allocate. It
// is generous (a bzip2 reader alone allocates 3.6 MB) but far below what a
// trusted corrupt length (up to MaxRecordSize) would cost.
const maxReadAlloc = 32 << 20

// smallFiles returns the Hadoop codec files and Writer-made files of every
// kind holding several records, several sync markers or blocks.
func smallFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	dir := filepath.Join(testdataDir(t), "codecs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["hadoop/"+e.Name()] = b
	}
	var recs []record
	for i := range 12 {
		recs = append(recs, record{fmt.Sprintf("k%d", i), strings.Repeat("value", i)})
	}
	for _, kind := range writeKinds {
		opts := WriterOptions{Compression: kind.comp, Codec: kind.codec, SyncInterval: 100, BlockSize: 100, Sync: [16]byte{7, 15: 7}}
		files["writer/"+kind.name] = writeAll(t, opts, recs)
	}
	return files
}

// readChecked reads data like readAll, also returning the byte positions at
// which a file could end cleanly and the bytes allocated while reading.
func readChecked(data []byte) (recs []record, ends map[int64]bool, alloc uint64, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	defer func() {
		runtime.ReadMemStats(&after)
		alloc = after.TotalAlloc - before.TotalAlloc
	}()
	r, err := NewReader(bytes.NewReader(data), "f")
	if err != nil {
		return nil, nil, 0, err
	}
	ends = map[int64]bool{r.pos: true}
	for r.Next() {
		recs = append(recs, record{string(r.Key()), string(r.Value())})
		ends[r.Offset()] = true
		ends[r.pos] = true
	}
	return recs, ends, 0, r.Err()
}

func TestTruncated(t *testing.T) {
	for name, data := range smallFiles(t) {
		t.Run(name, func(t *testing.T) {
			full, ends, _, err := readChecked(data)
			if err != nil {
				t.Fatal(err)
			}
			for cut := range len(data) {
				recs, _, alloc, err := readChecked(data[:cut])
				if alloc > maxReadAlloc {
					t.Errorf("cut at %d: allocated %d bytes", cut, alloc)
				}
				if len(recs) > len(full) || !slices.Equal(recs, full[:len(recs)]) {
					t.Fatalf("cut at %d: records %q are not a prefix of %q", cut, recs, full)
				}
				if ends[int64(cut)] {
					// A file cut exactly between records or blocks is a
					// valid, shorter file: the format has no record count.
					if err != nil {
						t.Errorf("cut at record boundary %d: %v", cut, err)
					}
					continue
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("cut at %d: err = %v, want ErrCorrupt", cut, err)
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.File != "f" || ce.Offset < 0 || ce.Offset > int64(cut) {
					t.Errorf("cut at %d: %#v", cut, err)
				}
			}
		})
	}
}

// TestBitFlips flips every bit of the small files. The format has no
// checksums of its own, so a flip may go unnoticed (a payload byte of an
// uncompressed record); what must hold is that reading never panics, hangs
// or allocates without bound, and that errors are ErrCorrupt.
func TestBitFlips(t *testing.T) {
	for name, data := range smallFiles(t) {
		t.Run(name, func(t *testing.T) {
			full, _, _, _ := readChecked(data)
			detected, same, changed := 0, 0, 0
			mutated := make([]byte, len(data))
			// Every bit of Hadoop's files; every third bit (still every
			// byte) of the Writer's larger ones, and every fifth of bzip2's,
			// whose Go reader allocates 3.6 MB per stream.
			step := 1
			if strings.HasPrefix(name, "writer/") {
				step = 3
			}
			if strings.Contains(name, "bzip2") {
				step = 5
			}
			if testing.Short() {
				step *= 7
			}
			for bit := 0; bit < 8*len(data); bit += step {
				copy(mutated, data)
				mutated[bit/8] ^= 1 << (bit % 8)
				recs, _, alloc, err := readChecked(mutated)
				if alloc > maxReadAlloc {
					t.Errorf("bit %d: allocated %d bytes", bit, alloc)
				}
				switch {
				case err != nil:
					if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
						t.Errorf("bit %d: err = %v, want ErrCorrupt or ErrUnsupported", bit, err)
					}
					detected++
				case slices.Equal(recs, full):
					same++
				default:
					changed++
				}
			}
			t.Logf("%d bit flips: %d detected, %d harmless, %d changed records undetected", (8*len(data)+step-1)/step, detected, same, changed)
		})
	}
}

// TestRandomFlips flips random bits of larger Writer-made files, several at
// a time.
func TestRandomFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := roundTripCases()["many records"][:1500]
	for _, kind := range writeKinds {
		t.Run(kind.name, func(t *testing.T) {
			data := writeAll(t, WriterOptions{Compression: kind.comp, Codec: kind.codec, BlockSize: 16 << 10}, recs)
			mutated := make([]byte, len(data))
			for range 300 {
				copy(mutated, data)
				for range 1 + rng.IntN(3) {
					mutated[rng.IntN(len(data))] ^= 1 << rng.IntN(8)
				}
				got, _, alloc, err := readChecked(mutated)
				if alloc > maxReadAlloc {
					t.Errorf("allocated %d bytes", alloc)
				}
				if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
					t.Errorf("err = %v", err)
				}
				if len(got) > len(recs)+1 {
					t.Errorf("read %d records of %d", len(got), len(recs))
				}
			}
		})
	}
}

// hostileFile builds a file with the given header fields and raw bytes after
// the header.
func hostileFile(comp Compression, codec string, body ...[]byte) []byte {
	h := Header{KeyClass: BytesWritable, ValueClass: BytesWritable, Compression: comp, Codec: codec, Sync: [16]byte{1}}
	b := appendHeader(nil, &h)
	for _, p := range body {
		b = append(b, p...)
	}
	return b
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func TestHostileLengths(t *testing.T) {
	key := []byte("\x00\x00\x00\x01k")
	// A zstd frame that declares 200 MiB of content but holds one 10-byte run.
	zstdFrame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	zstdFrame = binary.LittleEndian.AppendUint64(zstdFrame, 200<<20)
	zstdFrame = append(zstdFrame, 1|1<<1|10<<3, 0, 0, 'x')
	// Hadoop snappy framing that promises 200 MiB from one tiny chunk.
	snappyLie := append(be32(200<<20), be32(5)...)
	snappyLie = append(snappyLie, 0x80, 0x80, 0x80, 0x64, 0x00) // varint 200 MiB
	record := func(val []byte) []byte {
		b := append(be32(uint32(len(key)+len(val))), be32(uint32(len(key)))...)
		return append(append(b, key...), val...)
	}
	sync := append(be32(0xffffffff), 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	tests := []struct {
		name string
		data []byte
	}{
		{"record length max int", hostileFile(None, "", be32(0x7fffffff), be32(5))},
		{"record length 200 MiB, short", hostileFile(None, "", be32(200<<20), be32(5), key)},
		{"negative record length", hostileFile(None, "", be32(0x80000000), be32(5))},
		{"key longer than record", hostileFile(None, "", be32(5), be32(6), key)},
		{"wrong sync", hostileFile(None, "", be32(0xffffffff), make([]byte, 16))},
		{"bytes writable length lie", hostileFile(None, "", record([]byte("\x00\x10\x00\x00v")))},
		{"zstd content size lie", hostileFile(Record, ZStandardCodec, record(zstdFrame))},
		{"snappy size lie", hostileFile(Record, SnappyCodec, record(snappyLie))},
		{"block count huge", hostileFile(Block, SnappyCodec, sync, []byte{0x8c, 0x7f, 0xff, 0xff, 0xff}, []byte{0, 0, 0, 0})},
		{"block buffer size huge", hostileFile(Block, SnappyCodec, sync, []byte{1, 0x8c, 0x7f, 0xff, 0xff, 0xff})},
		{"block without sync", hostileFile(Block, SnappyCodec, be32(7))},
		{"block zero records", hostileFile(Block, SnappyCodec, sync, []byte{0, 0, 0, 0, 0})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, _, alloc, err := readChecked(tt.data)
			if !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
				t.Errorf("got %d records, err %v; want ErrCorrupt", len(recs), err)
			}
			if alloc > 4<<20 {
				t.Errorf("allocated %d bytes", alloc)
			}
		})
	}
}
