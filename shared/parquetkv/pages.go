package parquetkv

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// maxPageSize bounds what one page may claim, compressed or not. Spark
// and the other writers cut pages at about 1 MiB; a claim this large is
// a corrupt header, and it also bounds what one column holds in memory.
const maxPageSize = 64 << 20

// maxThriftDepth bounds nesting in a page header: the real ones nest
// three deep (header, data page header, statistics).
const maxThriftDepth = 8

// pageScanner walks the pages of column chunks: it reads each page
// header itself (the Thrift compact encoding, only the four fields it
// needs) and checks sizes and CRCs before arrow-go decodes the chunk.
// Not safe for concurrent use; one per Reader.
type pageScanner struct {
	r   io.ReaderAt
	max int64 // what a page may claim; maxPageSize unless a test lowers it
	// ratio bounds a page's uncompressed size by its stored size under
	// the chunk's codec (0: no bound), set per chunk.
	ratio int64
	br    *bufio.Reader
	buf   []byte
	pos   int64 // absolute offset of the next byte br gives
	hdrN  int64 // bytes consumed by the header being parsed
	end   int64 // end of the chunk
}

func newPageScanner(r io.ReaderAt, max int64) *pageScanner {
	if max <= 0 || max > maxPageSize {
		max = maxPageSize
	}
	return &pageScanner{r: r, max: max, br: bufio.NewReaderSize(nil, 4096), buf: make([]byte, 64<<10)}
}

// expansion is the most a codec can expand its input by, so that a page
// header claiming more is refused before arrow-go allocates the claimed
// size: a Snappy copy element of 3 bytes gives at most 64, a deflate
// stream expands at most 1032 times, an LZ4 length byte of 255 adds 255.
// zstd and Brotli can legitimately expand by far more (a run of one
// value); their pages are bounded only by maxPageSize, and their
// decoders never write past the claimed size (codec.go).
func expansion(c compress.Compression) int64 {
	switch c {
	case compress.Codecs.Uncompressed:
		return 1
	case compress.Codecs.Snappy:
		return 22
	case compress.Codecs.Gzip:
		return 1032
	case compress.Codecs.Lz4, compress.Codecs.Lz4Raw:
		return 256
	}
	return 0
}

// expansionSlack covers a codec's fixed overhead on a tiny page.
const expansionSlack = 64

// pageHeader holds the fields of a Thrift PageHeader that the scan uses.
type pageHeader struct {
	typ                  int32
	uncompressed, stored int32
	crc                  int32
	hasCRC               bool
	values               int32 // num_values of a data page, v1 or v2
}

// scanChunk checks the pages of the chunk at [start, start+length):
// every header parses, every size fits the chunk and maxPageSize, and
// every page that carries a CRC matches it. column names the chunk in
// errors, which are *chunkError (bad data) or I/O errors from r.
// values is the chunk's value count: the scan stops once the data pages
// hold that many, as decoders do, so that the padding old parquet-mr
// files need (see Reader) is not read as a page.
func (s *pageScanner) scanChunk(start, length, values int64, codec compress.Compression) error {
	s.end = start + length
	s.ratio = expansion(codec)
	off := start
	var seen int64
	for page := 0; off < s.end && (values <= 0 || seen < values); page++ {
		s.br.Reset(io.NewSectionReader(s.r, off, s.end-off))
		s.hdrN = 0
		h, err := s.header()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return &chunkError{off, page, "page header runs past the end of the column chunk"}
			}
			var ce *chunkError
			if errors.As(err, &ce) {
				ce.offset, ce.page = off, page
			}
			return err
		}
		switch {
		case h.stored < 0 || h.uncompressed < 0:
			return &chunkError{off, page, fmt.Sprintf("negative page size (stored %d, uncompressed %d)", h.stored, h.uncompressed)}
		case int64(h.stored) > s.max || int64(h.uncompressed) > s.max:
			return &chunkError{off, page, fmt.Sprintf("page claims %d bytes stored, %d uncompressed: more than the %d a page may hold", h.stored, h.uncompressed, s.max)}
		case s.ratio > 0 && int64(h.uncompressed) > s.ratio*int64(h.stored)+expansionSlack:
			return &chunkError{off, page, fmt.Sprintf("page claims %d bytes uncompressed from %d stored: more than %s expands to", h.uncompressed, h.stored, codec)}
		}
		body := off + s.hdrN
		if int64(h.stored) > s.end-body {
			return &chunkError{off, page, fmt.Sprintf("page of %d bytes runs %d bytes past the end of its column chunk", h.stored, int64(h.stored)-(s.end-body))}
		}
		if h.hasCRC {
			sum, err := s.crc(body, int64(h.stored))
			if err != nil {
				return err
			}
			if sum != uint32(h.crc) {
				return &chunkError{off, page, fmt.Sprintf("page CRC mismatch: header says %08x, page bytes give %08x", uint32(h.crc), sum)}
			}
		}
		off = body + int64(h.stored)
		seen += int64(h.values)
	}
	return nil
}

func (s *pageScanner) crc(off, n int64) (uint32, error) {
	var sum uint32
	for n > 0 {
		b := s.buf[:min(int64(len(s.buf)), n)]
		if _, err := s.r.ReadAt(b, off); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, &chunkError{off, 0, "page runs past the end of the file"}
			}
			return 0, err
		}
		sum = crc32.Update(sum, crc32.IEEETable, b)
		off += int64(len(b))
		n -= int64(len(b))
	}
	return sum, nil
}

// chunkError is bad data in a column chunk.
type chunkError struct {
	offset int64
	page   int
	reason string
}

func (e *chunkError) Error() string {
	return fmt.Sprintf("page %d at byte %d: %s", e.page, e.offset, e.reason)
}

func (s *pageScanner) byte() (byte, error) {
	b, err := s.br.ReadByte()
	if err == nil {
		s.hdrN++
		if s.hdrN > s.max {
			return 0, &chunkError{reason: "page header larger than a page may be"}
		}
	}
	return b, err
}

func (s *pageScanner) uvarint() (uint64, error) {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := s.byte()
		if err != nil {
			return 0, err
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x, nil
		}
	}
	return 0, &chunkError{reason: "page header: varint too long"}
}

func (s *pageScanner) zigzag32() (int32, error) {
	u, err := s.uvarint()
	if err != nil {
		return 0, err
	}
	if u > 0xffffffff {
		return 0, &chunkError{reason: "page header: i32 out of range"}
	}
	return int32(uint32(u)>>1) ^ -int32(u&1), nil
}

// Thrift compact type codes.
const (
	tTrue, tFalse, tByte, tI16, tI32, tI64, tDouble, tBinary, tList, tSet, tMap, tStruct = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
)

// header parses one PageHeader, keeping fields 1 to 4.
func (s *pageScanner) header() (pageHeader, error) {
	var h pageHeader
	var seen [5]bool
	var id int16
	for {
		b, err := s.byte()
		if err != nil {
			return h, err
		}
		if b == 0 {
			break
		}
		typ := b & 0x0f
		if d := b >> 4; d != 0 {
			id += int16(d)
		} else {
			v, err := s.zigzag32()
			if err != nil {
				return h, err
			}
			id = int16(v)
		}
		if id >= 1 && id <= 4 && typ == tI32 {
			v, err := s.zigzag32()
			if err != nil {
				return h, err
			}
			seen[id] = true
			switch id {
			case 1:
				h.typ = v
			case 2:
				h.uncompressed = v
			case 3:
				h.stored = v
			case 4:
				h.crc, h.hasCRC = v, true
			}
			continue
		}
		if (id == 5 || id == 8) && typ == tStruct {
			if h.values, err = s.numValues(); err != nil {
				return h, err
			}
			continue
		}
		if err := s.skip(typ, 0); err != nil {
			return h, err
		}
	}
	if !seen[1] || !seen[2] || !seen[3] {
		return h, &chunkError{reason: "page header lacks its type or sizes"}
	}
	return h, nil
}

// numValues reads a DataPageHeader or DataPageHeaderV2 and returns its
// field 1, num_values.
func (s *pageScanner) numValues() (int32, error) {
	var id int16
	var n int32
	for {
		b, err := s.byte()
		if err != nil {
			return 0, err
		}
		if b == 0 {
			return n, nil
		}
		typ := b & 0x0f
		if d := b >> 4; d != 0 {
			id += int16(d)
		} else {
			v, err := s.zigzag32()
			if err != nil {
				return 0, err
			}
			id = int16(v)
		}
		if id == 1 && typ == tI32 {
			if n, err = s.zigzag32(); err != nil {
				return 0, err
			}
			if n < 0 {
				return 0, &chunkError{reason: "page header: negative value count"}
			}
			continue
		}
		if err := s.skip(typ, 1); err != nil {
			return 0, err
		}
	}
}

func (s *pageScanner) skip(typ byte, depth int) error {
	if depth > maxThriftDepth {
		return &chunkError{reason: "page header nested too deep"}
	}
	switch typ {
	case tTrue, tFalse:
		return nil
	case tByte:
		_, err := s.byte()
		return err
	case tI16, tI32, tI64:
		_, err := s.uvarint()
		return err
	case tDouble:
		return s.discard(8)
	case tBinary:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		return s.discard(n)
	case tList, tSet:
		b, err := s.byte()
		if err != nil {
			return err
		}
		n := uint64(b >> 4)
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		return s.skipN(n, b&0x0f, depth)
	case tMap:
		n, err := s.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		for i := uint64(0); i < n; i++ {
			if err := s.skipElem(kv>>4, depth); err != nil {
				return err
			}
			if err := s.skipElem(kv&0x0f, depth); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		for {
			b, err := s.byte()
			if err != nil {
				return err
			}
			if b == 0 {
				return nil
			}
			if b>>4 == 0 {
				if _, err := s.uvarint(); err != nil {
					return err
				}
			}
			if err := s.skip(b&0x0f, depth+1); err != nil {
				return err
			}
		}
	default:
		return &chunkError{reason: fmt.Sprintf("page header: unknown Thrift type %d", typ)}
	}
}

func (s *pageScanner) skipN(n uint64, typ byte, depth int) error {
	// Every element takes at least one byte, so a count beyond what is
	// left of the chunk is corrupt, and the loop below stays bounded.
	if n > uint64(s.end) {
		return &chunkError{reason: "page header: list longer than its chunk"}
	}
	for i := uint64(0); i < n; i++ {
		if err := s.skipElem(typ, depth); err != nil {
			return err
		}
	}
	return nil
}

// skipElem skips a list, set or map element: a boolean there is a byte.
func (s *pageScanner) skipElem(typ byte, depth int) error {
	if typ == tTrue || typ == tFalse {
		_, err := s.byte()
		return err
	}
	return s.skip(typ, depth+1)
}

func (s *pageScanner) discard(n uint64) error {
	if n > uint64(s.max) {
		return &chunkError{reason: "page header: field longer than a page may be"}
	}
	for n > 0 {
		k, err := s.br.Discard(int(n))
		s.hdrN += int64(k)
		n -= uint64(k)
		if err != nil {
			return err
		}
	}
	return nil
}
