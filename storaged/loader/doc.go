// Package loader turns a source version's SequenceFiles into partition
// databases in the local store: it is where a partition is loaded.
//
// A version of N data files has N partitions, and a key belongs to
// partition partitioner.Partition(key, N). Hadoop jobs usually write one
// partition per file, sorted by key, though not always the partition of
// the file's own index, so the loader checks rather than trusts:
//
//   - Fast path: a file is streamed straight into a sorted run of the
//     partition its first record belongs to, for as long as every record
//     belongs to that partition and keys ascend.
//   - General path: from the first record that breaks either rule (or from
//     the start, when the first record's partition is not held), records go
//     to per-partition memory buffers. When the buffers together exceed the
//     spill budget every buffer is sorted into a spill file; at the end each
//     partition's spill files and last buffer are merged into one run
//     (spill.go).
//
// A load that resolves duplicate keys (Parquet) takes both paths too,
// with the rules of fast.go that keep every duplicate found. Runs of one
// partition may overlap; LevelDB reads overlapping level-0 tables as one
// database. A corrupt or unreadable file fails the load with
// an error that names the file and the offset.
package loader
