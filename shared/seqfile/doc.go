// Package seqfile reads and writes Hadoop SequenceFiles, the binary
// key/value container that Hadoop and Spark jobs emit, so that spangle can
// load their output without a JVM.
//
// # Layout
//
// A file opens with a header: the bytes "SEQ" and a version byte (6 for
// every current Hadoop; 4 and 5 are also read), the key and value class
// names, two flags saying whether values are compressed and whether whole
// blocks are, the compression codec's Java class name, a small string map of
// metadata, and a random 16-byte sync marker. Strings are Hadoop "Text":
// a variable-length integer (see below) byte count and UTF-8 bytes.
//
// Uncompressed and record-compressed files then hold records, each a 4-byte
// big-endian length of key plus value, a 4-byte key length, the serialized
// key and the serialized value. A record-compressed file compresses each value
// on its own; keys stay plain. Every couple of kilobytes the writer puts a sync
// marker between records: the length -1 (which no record can have) and the
// header's 16 sync bytes, so that a reader can find a record boundary from
// any offset.
//
// A block-compressed file is a sequence of blocks, each preceded by a sync
// marker. A block is a record count and four compressed buffers, each
// prefixed by its compressed size: the key lengths, the keys, the value
// lengths and the values. Lengths inside the buffers are variable-length
// integers.
//
// Hadoop's variable-length integers (WritableUtils.writeVLong) store values
// from -112 to 127 in one byte; otherwise a first byte says the sign and how
// many big-endian bytes (1 to 8) follow.
//
// Keys and values are Writables serialized by Java. BytesWritable (a 4-byte
// length and the bytes) and Text (a vint length and the bytes) are unwrapped
// to their payload; any other class is handed over as its serialized bytes.
//
// # Codecs
//
// DefaultCodec is a zlib stream, GzipCodec a gzip stream, ZStandardCodec a
// zstd frame and BZip2Codec a bzip2 stream. SnappyCodec is not snappy's
// framing format but Hadoop's own block framing: a 4-byte big-endian
// uncompressed size followed by one or more chunks, each a 4-byte compressed
// size and a raw snappy block, repeated until the input ends. The Writer
// cannot produce bzip2, for which Go has no encoder.
//
// # Safety
//
// The Reader streams: it holds one record, or one block's four buffers, at a
// time. Every length read from the file is checked against the data that
// actually follows and against MaxRecordSize before it decides an allocation,
// so a corrupt or hostile file yields a *CorruptError, never a panic or a
// huge allocation. The format has no checksums of its own, so a flipped bit
// in a payload byte of an uncompressed file goes unnoticed; flips in lengths
// and markers are caught, and flips in compressed data as far as the codec
// checks (zlib, gzip, bzip2 and Hadoop's zstd carry checksums, snappy does
// not). Nor does the format count its records: a file cut exactly between two
// records (or blocks) reads as a shorter valid file, while a cut anywhere
// else is reported.
//
// Readers and Writers are not safe for concurrent use.
package seqfile
