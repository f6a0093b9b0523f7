package seqfile

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Hadoop codec class names, as written in a SequenceFile header.
const (
	// DefaultCodec is zlib (RFC 1950), Hadoop's default.
	DefaultCodec = "org.apache.hadoop.io.compress.DefaultCodec"
	// GzipCodec is gzip (RFC 1952).
	GzipCodec = "org.apache.hadoop.io.compress.GzipCodec"
	// SnappyCodec is raw snappy blocks in Hadoop's block framing.
	SnappyCodec = "org.apache.hadoop.io.compress.SnappyCodec"
	// ZStandardCodec is zstd frames.
	ZStandardCodec = "org.apache.hadoop.io.compress.ZStandardCodec"
	// BZip2Codec is bzip2; it can be read but not written.
	BZip2Codec = "org.apache.hadoop.io.compress.BZip2Codec"
)

// MaxRecordSize bounds every length the Reader accepts: a record, a
// decompressed value, and each decompressed buffer of a block. The Writer
// refuses records that would exceed it, so it can read all it writes.
const MaxRecordSize = 256 << 20

// snappyMaxInput is how much input Hadoop's SnappyCodec puts in one snappy
// chunk with its default 256 KiB buffer (buffer minus worst-case overhead).
// Writing chunks no larger keeps the output readable by Hadoop.
const snappyMaxInput = 256<<10 - (256<<10/6 + 32)

var errTooLarge = errors.New("decompressed data larger than the limit")

// decompressor decodes one complete compressed stream. It appends nothing:
// the result reuses dst's storage and is at most limit bytes.
type decompressor interface {
	decompress(dst, src []byte, limit int) ([]byte, error)
}

// compressor appends one complete compressed stream of src to dst.
type compressor interface {
	compress(dst, src []byte) ([]byte, error)
}

func newDecompressor(codec string) (decompressor, error) {
	switch codec {
	case DefaultCodec:
		return &zlibDecompressor{}, nil
	case GzipCodec:
		return &gzipDecompressor{}, nil
	case SnappyCodec:
		return snappyDecompressor{}, nil
	case ZStandardCodec:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(MaxRecordSize))
		if err != nil {
			return nil, fmt.Errorf("seqfile: zstd decoder: %w", err)
		}
		return &zstdDecompressor{d: d}, nil
	case BZip2Codec:
		return &bzip2Decompressor{}, nil
	}
	return nil, fmt.Errorf("seqfile: codec %q: %w", codec, ErrUnsupported)
}

func newCompressor(codec string) (compressor, error) {
	switch codec {
	case DefaultCodec:
		return newZlibCompressor(), nil
	case GzipCodec:
		return newGzipCompressor(), nil
	case SnappyCodec:
		return snappyCompressor{}, nil
	case ZStandardCodec:
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if err != nil {
			return nil, fmt.Errorf("seqfile: zstd encoder: %w", err)
		}
		return &zstdCompressor{e: e}, nil
	case BZip2Codec:
		return nil, fmt.Errorf("seqfile: codec %q: no bzip2 encoder in Go's standard library: %w", codec, ErrUnsupported)
	}
	return nil, fmt.Errorf("seqfile: codec %q: %w", codec, ErrUnsupported)
}

// readAllLimit reads rd to its end into dst's storage, failing once more
// than limit bytes come out. It grows dst only as data arrives.
func readAllLimit(dst []byte, rd io.Reader, limit int) ([]byte, error) {
	dst = dst[:0]
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := rd.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

type zlibDecompressor struct {
	src bytes.Reader
	zr  io.ReadCloser
}

func (d *zlibDecompressor) decompress(dst, src []byte, limit int) ([]byte, error) {
	d.src.Reset(src)
	if d.zr == nil {
		zr, err := zlib.NewReader(&d.src)
		if err != nil {
			return dst[:0], err
		}
		d.zr = zr
	} else if err := d.zr.(zlib.Resetter).Reset(&d.src, nil); err != nil {
		return dst[:0], err
	}
	return readAllLimit(dst, d.zr, limit)
}

type gzipDecompressor struct {
	src bytes.Reader
	zr  gzip.Reader
}

func (d *gzipDecompressor) decompress(dst, src []byte, limit int) ([]byte, error) {
	d.src.Reset(src)
	if err := d.zr.Reset(&d.src); err != nil {
		return dst[:0], err
	}
	return readAllLimit(dst, &d.zr, limit)
}

type bzip2Decompressor struct {
	src bytes.Reader
}

func (d *bzip2Decompressor) decompress(dst, src []byte, limit int) ([]byte, error) {
	d.src.Reset(src)
	// compress/bzip2 has no Reset; its reader is cheap until a block is read.
	return readAllLimit(dst, bzip2.NewReader(&d.src), limit)
}

type zstdDecompressor struct {
	d *zstd.Decoder
}

func (d *zstdDecompressor) decompress(dst, src []byte, limit int) ([]byte, error) {
	if err := zstdCheckFrames(src); err != nil {
		return dst[:0], err
	}
	out, err := d.d.DecodeAll(src, dst[:0])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return out[:0], errTooLarge
		}
		return out[:0], err
	}
	if len(out) > limit {
		return out, errTooLarge
	}
	return out, nil
}

// zstdMaxBlock is the most a zstd block can decode to.
const zstdMaxBlock = 128 << 10

// zstdCheckFrames walks the frames and blocks in src and rejects a frame
// whose declared content size its blocks could not produce. The decoder
// allocates the declared size up front, so without this check a few hostile
// bytes could make it allocate hundreds of megabytes.
func zstdCheckFrames(src []byte) error {
	for len(src) > 0 {
		var h zstd.Header
		rest, err := h.DecodeAndStrip(src)
		if err != nil {
			return fmt.Errorf("zstd frame header: %w", err)
		}
		if h.Skippable {
			if uint64(len(rest)) < uint64(h.SkippableSize) {
				return errors.New("zstd: truncated skippable frame")
			}
			src = rest[h.SkippableSize:]
			continue
		}
		var most uint64
		for last := false; !last; {
			if len(rest) < 3 {
				return errors.New("zstd: truncated block header")
			}
			bh := uint32(rest[0]) | uint32(rest[1])<<8 | uint32(rest[2])<<16
			rest = rest[3:]
			last = bh&1 == 1
			size := int(bh >> 3)
			stored := size
			switch (bh >> 1) & 3 {
			case 0: // raw
				most += uint64(size)
			case 1: // run of one byte
				most += uint64(size)
				stored = 1
			case 2:
				most += zstdMaxBlock
			default:
				return errors.New("zstd: reserved block type")
			}
			if len(rest) < stored {
				return errors.New("zstd: truncated block")
			}
			rest = rest[stored:]
		}
		if h.HasFCS && h.FrameContentSize > most {
			return fmt.Errorf("zstd: frame declares %d bytes but its blocks hold at most %d", h.FrameContentSize, most)
		}
		if h.HasCheckSum {
			if len(rest) < 4 {
				return errors.New("zstd: truncated checksum")
			}
			rest = rest[4:]
		}
		src = rest
	}
	return nil
}

// snappyMaxRatio bounds how much a raw snappy block can expand: its best
// tag copies 64 bytes for 3 bytes of input.
const snappyMaxRatio = 22

// snappyDecompressor decodes Hadoop's BlockCompressorStream framing around
// raw snappy blocks: repeated (uncompressed size, then chunks of compressed
// size and data until that many bytes came out).
type snappyDecompressor struct{}

func (snappyDecompressor) decompress(dst, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, errors.New("snappy: truncated block size")
		}
		want := int64(int32(binary.BigEndian.Uint32(src)))
		src = src[4:]
		if want < 0 {
			return dst, fmt.Errorf("snappy: negative block size %d", want)
		}
		if want > int64(limit-len(dst)) {
			return dst, errTooLarge
		}
		end := len(dst) + int(want)
		for len(dst) < end {
			chunk, rest, err := snappyChunk(src)
			if err != nil {
				return dst, err
			}
			src = rest
			n, err := snappy.DecodedLen(chunk)
			if err != nil {
				return dst, fmt.Errorf("snappy: %w", err)
			}
			if n > end-len(dst) {
				return dst, fmt.Errorf("snappy: chunk of %d bytes overruns its block", n)
			}
			if n > snappyMaxRatio*len(chunk) {
				return dst, fmt.Errorf("snappy: %d bytes cannot hold %d", len(chunk), n)
			}
			dst = slices.Grow(dst, n)
			if _, err := snappy.Decode(dst[len(dst):len(dst)+n], chunk); err != nil {
				return dst, fmt.Errorf("snappy: %w", err)
			}
			dst = dst[:len(dst)+n]
		}
		if want == 0 {
			// Hadoop follows an empty block with the one-byte snappy
			// encoding of nothing; skip such a chunk if present.
			if chunk, rest, err := snappyChunk(src); err == nil {
				if n, err := snappy.DecodedLen(chunk); err == nil && n == 0 {
					src = rest
				}
			}
		}
	}
	return dst, nil
}

// snappyChunk splits a length-prefixed chunk off the front of src.
func snappyChunk(src []byte) (chunk, rest []byte, err error) {
	if len(src) < 4 {
		return nil, src, errors.New("snappy: truncated chunk size")
	}
	n := int64(binary.BigEndian.Uint32(src))
	if n > int64(len(src)-4) {
		return nil, src, fmt.Errorf("snappy: chunk size %d exceeds the %d bytes left", n, len(src)-4)
	}
	return src[4 : 4+n], src[4+n:], nil
}

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// resettableWriter is what zlib.Writer and gzip.Writer have in common:
// a compressing writer that can start a new stream on another output.
type resettableWriter interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// deflateCompressor writes one zlib (DefaultCodec) or gzip (GzipCodec)
// stream per call. Both wrap deflate and differ only in their framing, so
// one type serves both, given the constructor of its writer. The writer,
// whose deflate state is large, is made once and reset for every stream.
type deflateCompressor struct {
	out       appendWriter
	zw        resettableWriter
	newWriter func(io.Writer) resettableWriter
}

func newZlibCompressor() *deflateCompressor {
	return &deflateCompressor{newWriter: func(w io.Writer) resettableWriter { return zlib.NewWriter(w) }}
}

func newGzipCompressor() *deflateCompressor {
	return &deflateCompressor{newWriter: func(w io.Writer) resettableWriter { return gzip.NewWriter(w) }}
}

func (c *deflateCompressor) compress(dst, src []byte) ([]byte, error) {
	c.out.b = dst
	if c.zw == nil {
		c.zw = c.newWriter(&c.out)
	} else {
		c.zw.Reset(&c.out)
	}
	if _, err := c.zw.Write(src); err != nil {
		return dst, err
	}
	err := c.zw.Close()
	dst, c.out.b = c.out.b, nil
	return dst, err
}

type zstdCompressor struct {
	e *zstd.Encoder
}

func (c *zstdCompressor) compress(dst, src []byte) ([]byte, error) {
	return c.e.EncodeAll(src, dst), nil
}

// snappyCompressor writes Hadoop's framing: one uncompressed size, then the
// input in chunks no larger than Hadoop's own.
type snappyCompressor struct{}

func (snappyCompressor) compress(dst, src []byte) ([]byte, error) {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(src)))
	for first := true; first || len(src) > 0; first = false {
		n := min(len(src), snappyMaxInput)
		at := len(dst)
		dst = slices.Grow(dst, 4+snappy.MaxEncodedLen(n))[:at+4]
		enc := snappy.Encode(dst[at+4:cap(dst)], src[:n])
		binary.BigEndian.PutUint32(dst[at:], uint32(len(enc)))
		dst = dst[:at+4+len(enc)]
		src = src[n:]
	}
	return dst, nil
}
