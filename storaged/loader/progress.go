package loader

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	"spangle/shared/seqfile"
	"spangle/shared/source"
)

// Progress counts what a load has done so far, for the status page, the
// health check and the periodic log line. It is safe for concurrent use:
// the loader updates it with atomic adds, once per read buffer for bytes
// and once per recordBatch records, never per record and never under a
// lock, so watching a load costs the load next to nothing. The zero value
// is ready; Load fills in the totals when it starts.
type Progress struct {
	started    atomic.Int64 // unix nanos when Load began reading; 0 before
	filesTotal atomic.Int64
	bytesTotal atomic.Int64
	filesDone  atomic.Int64
	bytesRead  atomic.Int64
	records    atomic.Int64
	// presharded counts files read whole on the fast path (each held one
	// sorted partition); spread counts files whose records went, at least
	// in part, to the per-partition buffers.
	presharded atomic.Int64
	spread     atomic.Int64
}

// recordBatch is how many records a file reader counts before it adds
// them to Progress.
const recordBatch = 4096

// ProgressSnapshot is what a Progress holds at one moment. Records has no
// total: a SequenceFile does not say how many records it holds.
type ProgressSnapshot struct {
	Started                time.Time
	FilesDone, FilesTotal  int64
	BytesDone, BytesTotal  int64
	Records                int64
	Presharded, Spread     int64
	Elapsed                time.Duration
	BytesPerSec, RecPerSec float64
}

// Snapshot returns the counters as of now; rates are averages since the
// load began reading. A nil Progress gives the zero snapshot.
func (p *Progress) Snapshot(now time.Time) ProgressSnapshot {
	if p == nil {
		return ProgressSnapshot{}
	}
	s := ProgressSnapshot{
		FilesDone: p.filesDone.Load(), FilesTotal: p.filesTotal.Load(),
		BytesDone: p.bytesRead.Load(), BytesTotal: p.bytesTotal.Load(),
		Records:    p.records.Load(),
		Presharded: p.presharded.Load(), Spread: p.spread.Load(),
	}
	if s.BytesTotal > 0 && s.BytesDone > s.BytesTotal {
		// A file read in place may be read twice in part (a Parquet
		// footer, the page headers checked before the pages are read):
		// done is never more than all.
		s.BytesDone = s.BytesTotal
	}
	if ns := p.started.Load(); ns != 0 {
		s.Started = time.Unix(0, ns)
		s.Elapsed = now.Sub(s.Started)
		if sec := s.Elapsed.Seconds(); sec > 0 {
			s.BytesPerSec = float64(s.BytesDone) / sec
			s.RecPerSec = float64(s.Records) / sec
		}
	}
	return s
}

// start records the totals of a load of files.
func (p *Progress) start(now time.Time, files int, bytes int64) {
	p.filesTotal.Store(int64(files))
	p.bytesTotal.Store(bytes)
	p.started.Store(now.UnixNano())
}

// countingReader adds the bytes read through it to a Progress: one atomic
// add per Read, which the formats' readers call once per buffer.
type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	if n > 0 {
		c.n.Add(int64(n))
	}
	return n, err
}

// ReadAt reads at off through the source's file when it offers random
// access (io.ReaderAt: the local source's; see randomAccess), counting
// what it read; else it fails with errors.ErrUnsupported.
func (c countingReader) ReadAt(b []byte, off int64) (int, error) {
	ra, ok := c.ReadCloser.(io.ReaderAt)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	n, err := ra.ReadAt(b, off)
	if n > 0 {
		c.n.Add(int64(n))
	}
	return n, err
}

// unwrap is the source's file that c counts the reads of.
func (c countingReader) unwrap() io.ReadCloser { return c.ReadCloser }

// countingChunker is a countingReader of a file that hands out its own
// buffers (seqfile.Chunker: the local source's): a SequenceFile is then
// decoded where the file's reads land, not copied out first.
type countingChunker struct {
	countingReader
	ch seqfile.Chunker
}

func (c countingChunker) Chunk() ([]byte, error) {
	b, err := c.ch.Chunk()
	c.n.Add(int64(len(b)))
	return b, err
}

// CopyTo copies through the source's file when it can (source.FileCopier),
// counting what it copied.
func (c countingReader) CopyTo(dst *os.File, n int64) (int64, error) {
	fc, ok := c.ReadCloser.(source.FileCopier)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	got, err := fc.CopyTo(dst, n)
	c.n.Add(got)
	return got, err
}
