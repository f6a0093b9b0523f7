// Package parquetkv turns one Parquet file into a stream of key/value
// records, the way a db's _FORMAT marker says its columns map to keys and
// values: one column is the key (a string, binary or integer column, the
// integers as decimal text), and the value is either one binary or string
// column served as it is, or the row's other columns as one JSON object.
//
// # Reading
//
// A file is read through an io.ReaderAt and its size, so a local file and
// an object store serve alike. The footer is read first and every size and
// offset in it is checked against the file before anything is allocated.
// Then the row groups are read one at a time. Before a row group's columns
// are decoded, each selected column chunk is walked page header by page
// header (pages.go): the sizes a header claims must fit the chunk and the
// configured page limits, and when a page carries a CRC-32 it is checked
// over the stored page bytes. Then the row group is decoded row by row:
// a flat column, or the element of a plain list, whose values need no
// conversion but a cast is read with arrow-go's typed column reader a
// page at a time and formatted straight from the page (direct.go); every
// other column goes through arrow-go's arrow record reader in batches of
// rows. Memory is bounded by a few pages per column and one batch, never
// by the file or a column.
//
// The decompressors arrow-go uses are replaced, process-wide and once, by
// bounded ones (codec.go): a page may never decompress to more than its
// header claims, so a small page cannot expand into gigabytes. The same
// place adds Parquet's deprecated LZ4 codec (Hadoop's block framing, with
// the raw-block fallback other readers use), which arrow-go lacks.
//
// Spark's INT96 timestamps are always read directly (int96.go), never
// converted by arrow-go, whose conversion rejects instants
// outside the nanosecond range that Spark writes routinely (year 1 or 9999).
//
// # Errors
//
// Every error about the data names the file and wraps ErrCorrupt (a bad
// file, including a null key or a key column that cannot be a key) or
// ErrBadFormat (the _FORMAT marker); an error from the io.ReaderAt itself is
// passed on wrapped but not marked, so a caller can retry an I/O failure
// and give up on bad data. Duplicate keys are not seen here: one file does
// not know the others, so the caller applies Format.Duplicates where the
// keys of a partition meet in order.
package parquetkv
