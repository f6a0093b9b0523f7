package sparkey

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	snappyfr "github.com/klauspost/compress/snappy"
)

// memFile is an in-memory io.WriteSeeker.
type memFile struct {
	b   []byte
	off int
}

func (m *memFile) Write(p []byte) (int, error) {
	if need := m.off + len(p); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
	copy(m.b[m.off:], p)
	m.off += len(p)
	return len(p), nil
}

func (m *memFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.off = int(off)
	case io.SeekCurrent:
		m.off += int(off)
	case io.SeekEnd:
		m.off = len(m.b) + int(off)
	}
	return int64(m.off), nil
}

// op is one writer call: a put, or a delete when del is set.
type op struct {
	key, val string
	del      bool
}

// write runs ops through a Writer and returns the log and framed index.
func write(t testing.TB, opts WriterOptions, ops []op) (log, index []byte) {
	t.Helper()
	lf := &memFile{}
	w, err := NewWriter(lf, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if o.del {
			err = w.Delete([]byte(o.key))
		} else {
			err = w.Put([]byte(o.key), []byte(o.val))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var ix bytes.Buffer
	if err := w.Close(&ix); err != nil {
		t.Fatal(err)
	}
	return lf.b, ix.Bytes()
}

// readAll reads every live pair of a log and its framed index.
func readAll(log, index []byte) ([][2]string, error) {
	return readPairs(bytes.NewReader(log), int64(len(log)), "test.spl", bytes.NewReader(index), "test.spi.sz")
}

// readPairs reads every live pair of a log of size bytes and its framed
// index.
func readPairs(log io.Reader, size int64, logName string, index io.Reader, indexName string) ([][2]string, error) {
	r, err := NewReader(log, size, logName, index, indexName)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out [][2]string
	for r.Next() {
		out = append(out, [2]string{string(r.Key()), string(r.Value())})
	}
	return out, r.Err()
}

// seedFiles returns the real files' bytes, for fuzz seeds and bad-input
// tables.
func seedFiles(t testing.TB, suffix string) [][]byte {
	var out [][]byte
	for _, dir := range []string{filepath.Join(testdata, "sequins", "sparkeydb", "1"), filepath.Join(testdata, "libsparkey", "users", "1")} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if filepath.Ext(e.Name()) == suffix || (suffix == ".sz" && len(e.Name()) > 7 && e.Name()[len(e.Name())-7:] == ".spi.sz") {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if len(b) < 2000 {
					out = append(out, b)
				}
			}
		}
	}
	return out
}

func mustCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: read without error", what)
	}
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.File == "" {
		t.Fatalf("%s: %v: want a CorruptError naming the file", what, err)
	}
}

func snappyReader(b []byte) io.Reader { return snappyfr.NewReader(bytes.NewReader(b)) }

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func leU64(b []byte) uint64 { return uint64(leU32(b)) | uint64(leU32(b[4:]))<<32 }

func snappyWriter(w io.Writer) io.WriteCloser { return snappyfr.NewBufferedWriter(w) }
