package seqfile

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Writable class names whose serialization the package unwraps.
const (
	// BytesWritable is serialized as a 4-byte big-endian length and the bytes.
	BytesWritable = "org.apache.hadoop.io.BytesWritable"
	// Text is serialized as a vint length and UTF-8 bytes.
	Text = "org.apache.hadoop.io.Text"
)

// Compression says how a file's records are compressed.
type Compression int

const (
	// None stores records as they are.
	None Compression = iota
	// Record compresses each value on its own; keys stay plain.
	Record
	// Block compresses batches of keys and values together.
	Block
)

// String returns the name Hadoop uses for the kind (NONE, RECORD, BLOCK).
func (c Compression) String() string {
	switch c {
	case None:
		return "NONE"
	case Record:
		return "RECORD"
	case Block:
		return "BLOCK"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Header is what a SequenceFile declares about itself before its records.
type Header struct {
	// Version is the format version byte (4, 5 or 6).
	Version byte
	// KeyClass and ValueClass are the Java class names of the Writables.
	KeyClass, ValueClass string
	// Compression is the kind of compression.
	Compression Compression
	// Codec is the codec's Java class name; empty when Compression is None.
	Codec string
	// Metadata is the file's free-form string map (never nil).
	Metadata map[string]string
	// Sync is the marker that separates records or blocks.
	Sync [16]byte
}

// magic opens every SequenceFile.
var magic = [3]byte{'S', 'E', 'Q'}

const (
	// version is the format version the Writer produces.
	version = 6
	// minVersion is the oldest version read: the first with block
	// compression and Text class names.
	minVersion = 4
	// maxHeaderString bounds class names and metadata strings.
	maxHeaderString = 1 << 20
)

// readHeader reads and validates the header at the start of the stream.
func (r *Reader) readHeader() error {
	var head [4]byte
	if err := r.readFull(head[:], "magic"); err != nil {
		return err
	}
	if [3]byte(head[:3]) != magic {
		return r.corrupt(fmt.Sprintf("magic bytes %q", head[:3]), ErrNotSequenceFile)
	}
	h := &r.hdr
	h.Version = head[3]
	if h.Version < minVersion || h.Version > version {
		return fmt.Errorf("seqfile: %s: format version %d: %w", r.name, h.Version, ErrUnsupported)
	}
	var err error
	if h.KeyClass, err = r.readString("key class"); err != nil {
		return err
	}
	if h.ValueClass, err = r.readString("value class"); err != nil {
		return err
	}
	compressed, err := r.readBool("compression flag")
	if err != nil {
		return err
	}
	block, err := r.readBool("block compression flag")
	if err != nil {
		return err
	}
	switch {
	case block && !compressed:
		return r.corrupt("block compression without compression", nil)
	case block:
		h.Compression = Block
	case compressed:
		h.Compression = Record
	}
	if compressed {
		h.Codec = DefaultCodec
		if h.Version >= 5 {
			if h.Codec, err = r.readString("codec class"); err != nil {
				return err
			}
		}
		if r.dec, err = newDecompressor(h.Codec); err != nil {
			return fmt.Errorf("seqfile: %s: %w", r.name, err)
		}
	}
	h.Metadata = map[string]string{}
	if h.Version >= 6 {
		if err := r.readMetadata(); err != nil {
			return err
		}
	}
	r.off = r.pos
	return r.readFull(h.Sync[:], "header sync marker")
}

func (r *Reader) readMetadata() error {
	r.off = r.pos
	n, err := r.readInt32("metadata size")
	if err != nil {
		return err
	}
	if n < 0 {
		return r.corrupt(fmt.Sprintf("negative metadata size %d", n), nil)
	}
	for i := int32(0); i < n; i++ {
		k, err := r.readString("metadata key")
		if err != nil {
			return err
		}
		v, err := r.readString("metadata value")
		if err != nil {
			return err
		}
		r.hdr.Metadata[k] = v
	}
	return nil
}

func (r *Reader) readBool(what string) (bool, error) {
	r.off = r.pos
	b := r.num[:1]
	if err := r.readFull(b, what); err != nil {
		return false, err
	}
	if b[0] > 1 {
		return false, r.corrupt(fmt.Sprintf("%s is %d, not 0 or 1", what, b[0]), nil)
	}
	return b[0] == 1, nil
}

// readString reads a Text-serialized string.
func (r *Reader) readString(what string) (string, error) {
	r.off = r.pos
	n, err := r.readVLong(what + " length")
	if err != nil {
		return "", err
	}
	if n < 0 || n > maxHeaderString {
		return "", r.corrupt(fmt.Sprintf("%s length %d", what, n), nil)
	}
	r.scratch, err = r.readN(r.scratch, int(n), what)
	if err != nil {
		return "", err
	}
	return string(r.scratch), nil
}

// appendHeader appends the serialized header h (version 6) to b.
func appendHeader(b []byte, h *Header) []byte {
	b = append(b, magic[:]...)
	b = append(b, version)
	b = appendText(b, h.KeyClass)
	b = appendText(b, h.ValueClass)
	b = append(b, boolByte(h.Compression != None), boolByte(h.Compression == Block))
	if h.Compression != None {
		b = appendText(b, h.Codec)
	}
	keys := make([]string, 0, len(h.Metadata))
	for k := range h.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys) // Hadoop keeps metadata in a TreeMap.
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = appendText(b, k)
		b = appendText(b, h.Metadata[k])
	}
	return append(b, h.Sync[:]...)
}

func appendText(b []byte, s string) []byte {
	b = appendVLong(b, int64(len(s)))
	return append(b, s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
