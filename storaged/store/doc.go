// Package store keeps loaded versions on local disk: one LevelDB database
// per partition per version, under <local_store>/<db>/<version>/, with a
// manifest saying which source files the version was built from and
// whether the build finished.
//
// Partitions are built write-once. Instead of LevelDB's write path (a
// journal, a memtable and compactions), a builder writes sorted runs
// straight into LevelDB table files and then writes the LevelDB MANIFEST
// and CURRENT files that describe them, so the result is an ordinary
// LevelDB database that any LevelDB reader opens.
//
// Partitions are read by the store's own reader of LevelDB's files
// (descriptor.go, sstable.go) rather than through goleveldb: the tables
// never change, so a point lookup needs none of a database's snapshots,
// version set or iterators. Each table keeps its index and bloom filter in
// memory and reads data blocks through the node's block cache (package
// blockcache); a lookup whose block is cached allocates nothing. A cached
// block carries a digest of its restart keys (digest.go), so that finding
// where to scan touches the block's last cache lines rather than keys
// across it.
//
// The local store is a cache: a version whose manifest is complete and
// matches the source is reused after a restart; anything else in the store
// is discarded.
package store
