package wire

import "time"

// LoadProgress is how far a node's load of a version has come, shown on
// /healthz and the status page while the version is BUILDING. Totals are
// those known before the load: the files and their bytes; a SequenceFile
// does not say how many records it holds, so records have no total.
// Rates are averages since the load began reading the source.
type LoadProgress struct {
	// FilesDone and FilesTotal count the data files the node reads: a
	// Sparkey log with its index is one, and one of a partition the node
	// does not hold is not read, so not counted; BytesTotal is theirs.
	FilesDone  int64 `json:"files_done"`
	FilesTotal int64 `json:"files_total"`
	BytesDone  int64 `json:"bytes_done"`
	BytesTotal int64 `json:"bytes_total"`
	Records    int64 `json:"records"`
	// Started is when the load began reading the source (after the
	// cluster decided this node's partitions).
	Started          time.Time `json:"started"`
	ElapsedSeconds   float64   `json:"elapsed_seconds"`
	BytesPerSecond   float64   `json:"bytes_per_second"`
	RecordsPerSecond float64   `json:"records_per_second"`
	// PreshardedFiles counts the files read whole as one sorted
	// partition each (the fast path); SpreadFiles those whose records
	// were spread over the partitions (the general path, used from the
	// first record that broke the fast path's rules).
	PreshardedFiles int64 `json:"presharded_files"`
	SpreadFiles     int64 `json:"spread_files"`
}
