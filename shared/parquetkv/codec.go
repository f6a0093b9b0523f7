package parquetkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// errPageBomb is the decompressors' error for a page that holds more than
// its header claims (arrow-go sizes dst to the claim).
var errPageBomb = errors.New("page decompresses to more bytes than its header claims")

// codecsOnce guards the one change this package makes to arrow-go's
// process-wide codec registry (compress.RegisterCodec, the library's only
// way to add or replace a codec). It runs before the first file is opened,
// so no decoder reads the registry while it is written, and it only
// replaces decoders with stricter ones that give the same bytes.
var codecsOnce sync.Once

func registerCodecs() {
	codecsOnce.Do(func() {
		if c, err := compress.GetCodec(compress.Codecs.Snappy); err == nil {
			compress.RegisterCodec(compress.Codecs.Snappy, boundedSnappy{c})
		}
		if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
			compress.RegisterCodec(compress.Codecs.Zstd, &boundedZstd{Codec: c})
		}
		compress.RegisterCodec(compress.Codecs.Lz4, hadoopLZ4{})
	})
}

// boundedSnappy refuses a block whose own length prefix exceeds dst
// before snappy would allocate it (up to 4 GiB from a few bytes).
type boundedSnappy struct{ compress.Codec }

func (c boundedSnappy) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (boundedSnappy) DecodeWithError(dst, src []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > len(dst) {
		return nil, fmt.Errorf("snappy: %w (%d > %d)", errPageBomb, n, len(dst))
	}
	return snappy.Decode(dst, src)
}

// boundedZstd streams a frame into dst and fails when more follows,
// instead of DecodeAll growing its output without bound.
type boundedZstd struct {
	compress.Codec
	pool sync.Pool // of *zstd.Decoder
}

func (c *boundedZstd) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (c *boundedZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	dec, _ := c.pool.Get().(*zstd.Decoder)
	if dec == nil {
		var err error
		dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(maxPageSize), zstd.WithDecoderMaxMemory(maxPageSize))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
	}
	defer c.pool.Put(dec)
	if err := dec.Reset(bytes.NewReader(src)); err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return readBounded(dec, dst, "zstd")
}

// readBounded reads r into dst and fails if r holds more than dst.
func readBounded(r io.Reader, dst []byte, codec string) ([]byte, error) {
	n, err := io.ReadFull(r, dst)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return dst[:n], nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", codec, err)
	}
	var one [1]byte
	if m, _ := r.Read(one[:]); m > 0 {
		return nil, fmt.Errorf("%s: %w (more than %d)", codec, errPageBomb, len(dst))
	}
	return dst[:n], nil
}

// hadoopLZ4 is Parquet's deprecated LZ4 codec. parquet-mr wrote Hadoop's
// block framing (per block: the uncompressed length, then chunks of a
// compressed length and an LZ4 block, all lengths 4-byte big-endian);
// some writers put one raw LZ4 block instead. As other readers do, the
// framing is tried first and the raw block if the framing does not fit.
type hadoopLZ4 struct{}

func (c hadoopLZ4) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (hadoopLZ4) DecodeWithError(dst, src []byte) ([]byte, error) {
	if out, ok := decodeHadoopLZ4(dst, src); ok {
		return out, nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, fmt.Errorf("lz4: neither Hadoop-framed nor a raw block: %w", err)
	}
	return dst[:n], nil
}

func decodeHadoopLZ4(dst, src []byte) ([]byte, bool) {
	out := 0
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, false
		}
		want := int64(binary.BigEndian.Uint32(src))
		src = src[4:]
		if want > int64(len(dst)-out) {
			return nil, false
		}
		for want > 0 {
			if len(src) < 4 {
				return nil, false
			}
			clen := int64(binary.BigEndian.Uint32(src))
			src = src[4:]
			if clen > int64(len(src)) {
				return nil, false
			}
			n, err := lz4.UncompressBlock(src[:clen], dst[out:out+int(want)])
			if err != nil || n == 0 {
				return nil, false
			}
			src = src[clen:]
			out += n
			want -= int64(n)
		}
	}
	return dst[:out], true
}

func (hadoopLZ4) Encode(dst, src []byte) []byte {
	bound := lz4.CompressBlockBound(len(src))
	if cap(dst) < bound+8 {
		dst = make([]byte, bound+8)
	}
	dst = dst[:bound+8]
	var c lz4.Compressor
	n, err := c.CompressBlock(src, dst[8:])
	if err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint32(dst, uint32(len(src)))
	binary.BigEndian.PutUint32(dst[4:], uint32(n))
	return dst[:8+n]
}

func (c hadoopLZ4) EncodeLevel(dst, src []byte, _ int) []byte { return c.Encode(dst, src) }

func (hadoopLZ4) CompressBound(n int64) int64 { return int64(lz4.CompressBlockBound(int(n))) + 8 }
