// Package sparkey reads and writes Spotify's Sparkey files, the second
// input format sequins accepts: a log of entries and a hash index over it,
// so that spangle can load them without libsparkey.
//
// # Log (NAME.spl)
//
// An 84-byte little-endian header (magic 0x49b39c95, major version 1,
// minor 0, a random file identifier shared with the index, put and delete
// counts, the end of the data, the longest key and value, the compression
// type and block size, and the most entries any block holds) is followed by
// entries. An entry is two unsigned LEB128 integers A and B: A = 0 is a
// delete of a B-byte key; otherwise a put of an (A-1)-byte key and a B-byte
// value, followed by the key and value bytes.
//
// With block compression (Snappy or zstd) the bytes after the header are
// blocks, each a LEB128 compressed length and the compressed bytes of at
// most the header's block size. The entries are read from the concatenated
// decompressed blocks: an entry's two integers always start and end in one
// block, its key and value may run on into the next blocks.
//
// # Index (NAME.spi, here NAME.spi.sz: the same in Snappy's framing format)
//
// A 112-byte header (magic 0x9a11318f, major 1, minor 0 or 1, the log's
// identifier and data end, a hash seed, the counts of puts and live
// entries, the address and hash widths, the table capacity) is followed by
// capacity slots of hash then address. The hash is MurmurHash3 of the key
// with the seed: x86_32 for a 4-byte hash, the first half of x64_128 for
// an 8-byte one. Address 0 is an empty slot; otherwise it locates a live
// put in the log: for an uncompressed log its byte offset, for a
// compressed one the block's offset shifted left by the header's
// entry_block_bits, or'ed with the entry's index among the entries that
// start in that block. Slots are placed by Robin Hood hashing.
//
// The index is the truth about which puts are live: a put that a later
// put of the same key or a delete overwrote has no slot. Reader therefore
// reads the index first and then yields exactly the puts it names, checking
// that every slot matches a put of a key with that hash in the log.
//
// Every length and count read from a file is checked against the file's
// own limits before anything is allocated, and every malformed file gives a
// *CorruptError naming the file and the byte offset.
package sparkey
