package sparkey

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// FuzzLogReader reads arbitrary bytes as a log: it must end cleanly or
// with a CorruptError, never panic or allocate beyond the input's limits.
func FuzzLogReader(f *testing.F) {
	for _, b := range seedFiles(f, ".spl") {
		f.Add(b)
	}
	for _, comp := range []Compression{None, Snappy, Zstd} {
		log, _ := write(f, WriterOptions{Compression: comp, BlockSize: 64}, []op{{key: "a", val: "1"}, {key: "b", del: true}, {key: "c", val: string(make([]byte, 100))}})
		f.Add(log)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, err := NewLogReader(bytes.NewReader(data), "fuzz.spl", int64(len(data)))
		if err != nil {
			checkFuzzErr(t, err)
			return
		}
		defer lr.Close()
		var n uint64
		for lr.Next() {
			n++
			if uint64(len(lr.Key())) > lr.Header().MaxKeyLen || uint64(len(lr.Value())) > lr.Header().MaxValueLen {
				t.Fatalf("entry longer than the header's limits")
			}
		}
		if err := lr.Err(); err != nil {
			checkFuzzErr(t, err)
		} else if h := lr.Header(); n != h.Puts+h.Deletes {
			t.Fatalf("read %d entries without error, the header counts %d", n, h.Puts+h.Deletes)
		}
	})
}

// FuzzLogReaderBytes reads arbitrary bytes as a log held whole
// (NewLogReaderBytes) and as a stream (NewLogReader): the same entries,
// at the same offsets, and the same error.
func FuzzLogReaderBytes(f *testing.F) {
	for _, b := range seedFiles(f, ".spl") {
		f.Add(b)
	}
	log, _ := write(f, WriterOptions{}, []op{{key: "a", val: "1"}, {key: "b", del: true}, {key: "c", val: string(make([]byte, 300))}})
	f.Add(log)
	f.Add(log[:len(log)-5])
	f.Fuzz(func(t *testing.T, data []byte) {
		sr, serr := NewLogReader(bytes.NewReader(data), "fuzz.spl", int64(len(data)))
		br, berr := NewLogReaderBytes(data, "fuzz.spl")
		if fmt.Sprint(serr) != fmt.Sprint(berr) {
			t.Fatalf("header: streamed %v, whole %v", serr, berr)
		}
		if serr != nil {
			return
		}
		defer sr.Close()
		defer br.Close()
		for {
			sn, bn := sr.Next(), br.Next()
			if sn != bn {
				t.Fatalf("streamed Next %v, whole %v", sn, bn)
			}
			if !sn {
				break
			}
			if !bytes.Equal(sr.Key(), br.Key()) || !bytes.Equal(sr.Value(), br.Value()) || sr.Deleted() != br.Deleted() || sr.Offset() != br.Offset() {
				t.Fatalf("entry at %d/%d differs", sr.Offset(), br.Offset())
			}
		}
		if fmt.Sprint(sr.Err()) != fmt.Sprint(br.Err()) {
			t.Fatalf("streamed %v, whole %v", sr.Err(), br.Err())
		}
	})
}

// FuzzIndexReader reads arbitrary bytes as an uncompressed index, and the
// same bytes framed by Snappy, as the index of a small log.
func FuzzIndexReader(f *testing.F) {
	log, index := write(f, WriterOptions{Seed: 7, FileID: 9}, []op{{key: "a", val: "1"}, {key: "b", val: "2"}, {key: "a", val: "3"}})
	var raw bytes.Buffer
	raw.ReadFrom(snappyReader(index))
	f.Add(raw.Bytes())
	for _, b := range seedFiles(f, ".sz") {
		var r bytes.Buffer
		if _, err := r.ReadFrom(snappyReader(b)); err == nil {
			f.Add(r.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ir, err := NewIndexReader(bytes.NewReader(data), "fuzz.spi")
		if err == nil {
			var n uint64
			for ir.Next() {
				if _, a := ir.Slot(); a == 0 {
					t.Fatal("an empty slot yielded")
				}
				n++
			}
			err = ir.Err()
			if err == nil && n > ir.Header().Capacity {
				t.Fatalf("%d occupied slots in a table of %d", n, ir.Header().Capacity)
			}
		}
		if err != nil {
			checkFuzzErr(t, err)
		}
		var framed bytes.Buffer
		w := snappyWriter(&framed)
		w.Write(data)
		w.Close()
		pairs, err := readAll(log, framed.Bytes())
		if err != nil {
			checkFuzzErr(t, err)
			return
		}
		for _, p := range pairs {
			if p != [2]string{"b", "2"} && p != [2]string{"a", "3"} && p != [2]string{"a", "1"} {
				t.Fatalf("read %q, never written", p)
			}
		}
	})
}

func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("error %v is not a CorruptError", err)
	}
}
