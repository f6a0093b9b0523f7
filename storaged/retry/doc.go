// Package retry says which failures of a version's load are worth trying
// again with the same files, and when: a load that failed for a reason
// outside the data (the source unreachable, an object changed mid-read, a
// local disk error) is loaded again after a backoff that doubles with
// each failure in a row; one that failed on its data stays failed until
// its files change.
//
// versions.Manager keeps a Backoff per failed version under its own lock
// and asks for a scan when one is due; Refresh makes every retry due at
// once. Nothing here is safe for concurrent use by itself.
package retry
