// Package table writes and reads LevelDB's file format: one partition is
// one ordinary LevelDB database, its sorted runs as table files (.ldb) and
// the descriptor and CURRENT files that list them, so that any LevelDB
// reader opens what this package writes. It knows nothing of versions or
// of where the local store puts a partition (package store).
//
// "Descriptor" here means LevelDB's MANIFEST-<n> file, the journal of
// version edits that CURRENT names (descriptor.go); the word "manifest" is
// left to package store's record of a version.
//
// Partitions are built write-once. Instead of LevelDB's write path (a
// journal, a memtable and compactions), a builder (builder.go) writes
// sorted runs straight into table files (sstwriter.go) and then writes the
// descriptor and CURRENT files that describe them.
//
// Partitions are read by this package's own reader of LevelDB's files
// (descriptor.go, sstable.go) rather than through goleveldb: the tables
// never change, so a point lookup needs none of a database's snapshots,
// version set or iterators. Each table keeps its index in memory, and its
// bloom filter unless it is mapped and its blocks are plain (lookups then
// search blocks in place and never ask it), and reads data blocks through
// the node's block cache (package blockcache) or its mapping; a lookup
// whose block is cached allocates nothing. A cached block carries a
// digest of its restart keys (digest.go), so that finding
// where to scan touches the block's last cache lines rather than keys
// across it. A block read from its file is checked against its checksum;
// VerifyPartition (verify.go) checks every block of a partition, as a
// scrub does; a bad block is an error wrapping ErrCorrupt. A partition
// just built opens with PartitionBuilder.Open, which takes each table's
// index and filter from its writer instead of reading them back;
// OpenPartition (a restart, a copy) reads and checks them in the files.
//
// A partition's directory may also hold Sparkey pairs served in place
// (sparkey.go): an uncompressed log and its index copied there by the
// loader and checked once (PlaceSparkeyPair), with a sum file recording
// their sizes and CRC-32C. OpenPartition maps them and Partition.Get
// looks keys up in them after the tables; VerifyPartition checks their
// checksums and structure again.
package table
