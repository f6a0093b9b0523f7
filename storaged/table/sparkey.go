package table

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"spangle/shared/badfile"
	"spangle/shared/partitioner"
	"spangle/shared/sparkey"
)

// A partition may serve Sparkey pairs in place beside (or instead of) its
// LevelDB tables: an uncompressed log BASE.spl and its uncompressed index
// BASE.spi, copied from the source, with BASE.spsum, written last, which
// records the partition they were checked for and each file's size and
// CRC-32C (Sparkey has no checksum of its own). Only a pair with its sum
// file is opened; its files are mapped into memory and looked up as
// libsparkey does (sparkey.Table). The files are ordinary files of the
// partition's directory, so peer copy, which sends the directory's
// files, and the local store's reuse at start need nothing more.
const (
	sparkeyLogExt   = ".spl"
	sparkeyIndexExt = ".spi"
	sparkeySumExt   = ".spsum"
	// maxSumFile bounds a sum file read.
	maxSumFile = 1 << 10
	sumMagic   = "spangle-sparkey-pair 1"
)

// SparkeyPair is a Sparkey pair a partition serves in place.
type SparkeyPair struct {
	// Base names the files BASE.spl, BASE.spi and BASE.spsum in the
	// partition's directory.
	Base string
	// Partition of Partitions is what every key was checked to belong to.
	Partition, Partitions int
	LogSize, IndexSize    int64
	LogCRC, IndexCRC      uint32
}

// SparkeyPaths returns the paths of pair base's log, index and sum file
// in dir.
func SparkeyPaths(dir, base string) (log, index, sum string) {
	b := filepath.Join(dir, base)
	return b + sparkeyLogExt, b + sparkeyIndexExt, b + sparkeySumExt
}

// marshal writes the sum file's text.
func (s *SparkeyPair) marshal() []byte {
	return fmt.Appendf(nil, "%s\npartition %d %d\nlog %d %08x\nindex %d %08x\n",
		sumMagic, s.Partition, s.Partitions, s.LogSize, s.LogCRC, s.IndexSize, s.IndexCRC)
}

// parseSparkeySum parses a sum file of pair base.
func parseSparkeySum(b []byte, base string) (SparkeyPair, error) {
	s := SparkeyPair{Base: base}
	lines := strings.Split(string(b), "\n")
	if len(lines) != 5 || lines[0] != sumMagic || lines[4] != "" {
		return s, errors.New("not a sum file")
	}
	field := func(line, name string, n int) ([]string, error) {
		f := strings.Fields(line)
		if len(f) != n+1 || f[0] != name {
			return nil, fmt.Errorf("bad %s line %q", name, line)
		}
		return f[1:], nil
	}
	num := func(v string, bits int) (int64, error) { return strconv.ParseInt(v, 10, bits) }
	crc := func(v string) (uint32, error) {
		if len(v) != 8 {
			return 0, fmt.Errorf("bad checksum %q", v)
		}
		c, err := strconv.ParseUint(v, 16, 32)
		return uint32(c), err
	}
	f, err := field(lines[1], "partition", 2)
	if err != nil {
		return s, err
	}
	p, err1 := num(f[0], 32)
	n, err2 := num(f[1], 32)
	if err := errors.Join(err1, err2); err != nil || p < 0 || n <= p {
		return s, fmt.Errorf("bad partition line %q", lines[1])
	}
	s.Partition, s.Partitions = int(p), int(n)
	for i, dst := range []struct {
		name string
		size *int64
		crc  *uint32
	}{{"log", &s.LogSize, &s.LogCRC}, {"index", &s.IndexSize, &s.IndexCRC}} {
		f, err := field(lines[2+i], dst.name, 2)
		if err != nil {
			return s, err
		}
		sz, err1 := num(f[0], 64)
		c, err2 := crc(f[1])
		if err := errors.Join(err1, err2); err != nil || sz < 0 {
			return s, fmt.Errorf("bad %s line %q", dst.name, lines[2+i])
		}
		*dst.size, *dst.crc = sz, c
	}
	return s, nil
}

// sparkeyBases lists the pairs with a sum file in dir.
func sparkeyBases(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), sparkeySumExt); ok && e.Type().IsRegular() {
			out = append(out, base)
		}
	}
	return out, nil
}

func readSparkeySum(dir, base string) (SparkeyPair, error) {
	_, _, path := SparkeyPaths(dir, base)
	f, err := os.Open(path)
	if err != nil {
		return SparkeyPair{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSumFile+1))
	if err != nil {
		return SparkeyPair{}, err
	}
	if len(b) > maxSumFile {
		return SparkeyPair{}, fmt.Errorf("%w: %s: longer than %d bytes", ErrCorrupt, path, maxSumFile)
	}
	s, err := parseSparkeySum(b, base)
	if err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return s, nil
}

// mappedPair is a pair's two files mapped into memory.
type mappedPair struct {
	t          *sparkey.Table
	log, index []byte
}

// mapPair maps the pair's files, checks their sizes against the sum
// file's and their headers (sparkey.OpenTable); names, when set, are the
// names errors give the two files (else their paths).
func mapPair(dir string, s SparkeyPair, logName, indexName string, populate bool) (*mappedPair, error) {
	logPath, indexPath, _ := SparkeyPaths(dir, s.Base)
	if logName == "" {
		logName, indexName = logPath, indexPath
	}
	m := &mappedPair{}
	var err error
	if m.log, err = mapChecked(logPath, s.LogSize, populate); err == nil {
		m.index, err = mapChecked(indexPath, s.IndexSize, populate)
	}
	if err == nil {
		m.t, err = sparkey.OpenTable(m.log, logName, m.index, indexName)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// mapChecked maps path, which must be size bytes.
func mapChecked(path string, size int64, populate bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != size || size == 0 {
		return nil, fmt.Errorf("%w: %s: %d bytes, its sum file says %d", ErrCorrupt, path, fi.Size(), size)
	}
	return mapFile(f, size, populate)
}

func (m *mappedPair) close() error {
	var errs []error
	if m.log != nil {
		errs = append(errs, unmapFile(m.log))
	}
	if m.index != nil {
		errs = append(errs, unmapFile(m.index))
	}
	m.log, m.index, m.t = nil, nil, nil
	return errors.Join(errs...)
}

// openSparkeyPairs maps the pairs of dir.
func openSparkeyPairs(dir string) ([]*mappedPair, error) {
	bases, err := sparkeyBases(dir)
	if err != nil {
		return nil, err
	}
	var out []*mappedPair
	for _, base := range bases {
		s, err := readSparkeySum(dir, base)
		var m *mappedPair
		if err == nil {
			m, err = mapPair(dir, s, "", "", false)
		}
		if err != nil {
			for _, m := range out {
				m.close()
			}
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// getSparkey looks key up in the pairs, in turn (their key ranges do not
// overlap).
func getSparkey(pairs []*mappedPair, dst, key []byte) ([]byte, error) {
	for _, m := range pairs {
		v, ok, err := m.t.Get(dst, key)
		if err != nil {
			return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if ok {
			return v, nil
		}
	}
	return dst, ErrNotFound
}

// ErrSparkeyWrite marks PlaceSparkeyPair's failures to write the local
// store (the source's data may be fine).
var ErrSparkeyWrite = errors.New("table: writing a Sparkey pair failed")

// PlaceSparkeyPair copies a Sparkey log of size bytes from src into dir as
// pair base (BASE.spl, as SparkeyPaths names it), beside its index,
// which the caller wrote uncompressed to BASE.spi, checks the pair, and
// writes its sum file, which makes OpenPartition serve it. The log is
// checked as it streams past, read once: every entry within the data and
// the header's limits and counts, the index's slots exactly its live
// puts, each found by its key's probe, no key twice (sparkey.IndexCheck);
// check is called with every live key and its offset (the caller checks
// the key's partition) and its error is returned as it is. logName and
// indexName name the files in errors (the source's, say). It returns the
// pair's files, to sync; on error the caller removes dir.
func PlaceSparkeyPair(dir, base string, p, n int, src io.Reader, size int64, logName, indexName string, check func(key []byte, off int64) error) ([]string, error) {
	return placeSparkey(dir, base, p, n, src, nil, size, logName, indexName, check)
}

// PlaceSparkeyCopy is PlaceSparkeyPair for a log that fill copies into
// the store itself (in the kernel, say: copy_file_range): fill writes
// the log's size bytes to f from its start, and its errors are returned
// as they are. The copy is then checked as PlaceSparkeyPair checks what
// it reads, in one pass over the copy mapped (the checks and the sum
// file's CRC-32C): what is served is what was checked, whatever the
// source did during the copy.
func PlaceSparkeyCopy(dir, base string, p, n int, size int64, fill func(f *os.File) error, logName, indexName string, check func(key []byte, off int64) error) ([]string, error) {
	return placeSparkey(dir, base, p, n, nil, fill, size, logName, indexName, check)
}

func placeSparkey(dir, base string, p, n int, src io.Reader, fill func(f *os.File) error, size int64, logName, indexName string, check func(key []byte, off int64) error) ([]string, error) {
	logPath, indexPath, sumPath := SparkeyPaths(dir, base)
	s := SparkeyPair{Base: base, Partition: p, Partitions: n, LogSize: size}
	fi, err := os.Stat(indexPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
	}
	s.IndexSize = fi.Size()
	if s.IndexSize < sparkey.IndexHeaderSize {
		return nil, sparkeyCorrupt(indexName, s.IndexSize, "truncated while reading the header")
	}
	index, err := mapChecked(indexPath, s.IndexSize, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
	}
	defer unmapFile(index)
	s.IndexCRC = crc32.Checksum(index, castagnoli)

	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
	}
	defer f.Close()
	if size > 0 {
		reserve(f, 0, size) // else the writes allocate as they go
	}
	w := &crcWriter{w: f}
	var log []byte // the copy, mapped, when fill made it
	if fill != nil {
		if err := fill(f); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
		}
		if size == 0 {
			return nil, sparkeyCorrupt(logName, 0, "truncated while reading the header")
		}
		if log, err = mapChecked(logPath, size, false); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
		}
		defer func() { unmapFile(log) }()
		// Parsed where it lies; summed a chunk behind the parse, while
		// the chunk is still in the CPU's caches, and then dropped from
		// the process (dropMapped): the mapping would otherwise count
		// the whole log in the load's peak RSS.
		w.w = io.Discard
	}
	in := io.TeeReader(src, w)
	var lr *sparkey.LogReader
	var dropped int64 // of the mapped copy, summed and dropped
	if log != nil {
		lr, err = sparkey.NewLogReaderBytes(log, logName)
	} else {
		lr, err = sparkey.NewLogReader(in, logName, size)
	}
	if err != nil {
		return nil, w.mark(err)
	}
	defer lr.Close()
	ic, err := sparkey.NewIndexCheck(lr.Header(), logName, index, indexName)
	if err != nil {
		return nil, err
	}
	for lr.Next() {
		if log != nil && lr.Offset()-w.n >= sumChunk {
			w.Write(log[w.n:lr.Offset()])
			if end := w.n &^ (sumChunk - 1); end > dropped {
				dropMapped(log[dropped:end])
				dropped = end
			}
		}
		if lr.Deleted() || !ic.Put(lr.Key(), lr.Offset()) {
			continue
		}
		if err := check(lr.Key(), lr.Offset()); err != nil {
			return nil, err
		}
	}
	if err := lr.Err(); err != nil {
		return nil, w.mark(err)
	}
	// What follows the data end is copied too: the file is the source's.
	if log != nil {
		w.Write(log[w.n:])
	} else if _, err := io.Copy(io.Discard, in); err != nil {
		return nil, w.mark(fmt.Errorf("sparkey: reading %s: %w", logName, err))
	}
	if w.n != size {
		return nil, sparkeyCorrupt(logName, w.n, fmt.Sprintf("%d bytes, the listing said %d", w.n, size))
	}
	s.LogCRC = w.crc
	if log == nil {
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
		}
		if log, err = mapChecked(logPath, size, false); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
		}
		defer func() { unmapFile(log) }()
	}
	if err := ic.Finish(log); err != nil {
		return nil, err
	}
	if err := os.WriteFile(sumPath, s.marshal(), 0o644); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSparkeyWrite, err)
	}
	return []string{logPath, indexPath, sumPath}, nil
}

// sumChunk is how far the sum of a mapped copy trails its parse.
const sumChunk = 256 << 10

// crcWriter writes to w, counting the bytes and their CRC-32C, and keeps
// the first error of w.
type crcWriter struct {
	w   io.Writer
	n   int64
	crc uint32
	err error
}

func (c *crcWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli, b[:n])
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// mark returns err as ErrSparkeyWrite when writing the copy failed (the
// tee then fails the read).
func (c *crcWriter) mark(err error) error {
	if c.err != nil {
		return fmt.Errorf("%w: %w", ErrSparkeyWrite, c.err)
	}
	return err
}

func sparkeyCorrupt(file string, off int64, what string) error {
	return badfile.New("sparkey", sparkey.ErrCorrupt, file, off, what, nil)
}

// verifySparkey checks the pairs of dir as a scrub does: each file's
// size and checksum against its sum file, read from disk (paced), then
// the structure as PlaceSparkeyPair checked it, every live key in the
// partition the sum file names. A mismatch wraps ErrCorrupt.
func verifySparkey(ctx context.Context, dir string, buf []byte, pace func(n int) error) ([]byte, error) {
	bases, err := sparkeyBases(dir)
	if err != nil {
		return buf, err
	}
	for _, base := range bases {
		s, err := readSparkeySum(dir, base)
		if err != nil {
			return buf, err
		}
		logPath, indexPath, _ := SparkeyPaths(dir, base)
		for _, f := range []struct {
			path string
			size int64
			crc  uint32
		}{{logPath, s.LogSize, s.LogCRC}, {indexPath, s.IndexSize, s.IndexCRC}} {
			if buf, err = checksumFile(ctx, f.path, f.size, f.crc, buf, pace); err != nil {
				return buf, err
			}
		}
		m, err := mapPair(dir, s, "", "", true)
		if err != nil {
			return buf, err
		}
		err = m.t.Walk(func(key []byte, off int64) error {
			if q := partitioner.Partition(key, s.Partitions); q != s.Partition {
				return sparkeyCorrupt(logPath, off, fmt.Sprintf("key of partition %d of %d, the pair is of partition %d", q, s.Partitions, s.Partition))
			}
			return nil
		})
		m.close()
		if err != nil {
			return buf, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return buf, nil
}

// checksumFile reads path, which must be size bytes, in verifyChunk reads
// and checks its CRC-32C.
func checksumFile(ctx context.Context, path string, size int64, want uint32, buf []byte, pace func(n int) error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if cap(buf) < verifyChunk {
		buf = make([]byte, verifyChunk)
	}
	var crc uint32
	var off int64
	for {
		if err := ctx.Err(); err != nil {
			return buf, err
		}
		b := buf[:verifyChunk]
		if pace != nil {
			if err := pace(len(b)); err != nil {
				return buf, err
			}
		}
		n, err := f.ReadAt(b, off)
		crc = crc32.Update(crc, castagnoli, b[:n])
		off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return buf, fmt.Errorf("%s: %w", path, err)
		}
	}
	switch {
	case off != size:
		return buf, fmt.Errorf("%w: %s: %d bytes, its sum file says %d", ErrCorrupt, path, off, size)
	case crc != want:
		return buf, fmt.Errorf("%w: %s: checksum %08x, its sum file says %08x", ErrCorrupt, path, crc, want)
	}
	return buf, nil
}
