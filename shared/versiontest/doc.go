// Package versiontest writes versions of a db into a source root for
// tests, benchmarks and end-to-end runs, in every input format storaged's
// loader reads: Hadoop SequenceFiles (shared/seqfile's writer), Sparkey
// pairs as sequins jobs write them (shared/sparkey's writer) and Parquet
// files as Spark names them (the arrow-go writer). It is test support,
// like zktest and proctest: nothing in a daemon imports it.
//
// Every writer in the tree goes through Write: callers choose the
// format, the file count, how records are spread over the files (by
// partition, as a Hadoop job with spangle's partitioner writes them, or
// dealt round-robin), whether the version appears at once (written aside
// and renamed into place, as a job's output commits) and whether it gets
// a _SUCCESS marker. Records come from a slice or, for datasets too large
// to hold, from a function called once per file.
//
// Functions return errors rather than take a testing.TB, so code without
// a test (a benchmark's driver, TestMain) uses them too; T wraps them for
// a test.
package versiontest
