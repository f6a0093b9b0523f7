package loader

import (
	"context"
	"fmt"
	"io"

	"spangle/shared/seqfile"
	"spangle/shared/source"
)

// SequenceFileFormat reads Hadoop SequenceFiles: N is the number of data
// files, and keys go to their partitions whatever file holds them.
type SequenceFileFormat struct{}

// Name implements Format.
func (SequenceFileFormat) Name() string { return "SequenceFile" }

// Claims implements Format: SequenceFiles have no telling name.
func (SequenceFileFormat) Claims(string) bool { return true }

// Layout implements Format: one unit per file.
func (SequenceFileFormat) Layout(files []source.File) (Layout, error) {
	l := Layout{Partitions: len(files), Units: make([]Unit, len(files))}
	for i, f := range files {
		l.Units[i] = Unit{Files: []source.File{f}, Partition: -1}
	}
	return l, nil
}

// Open implements Format.
func (SequenceFileFormat) Open(ctx context.Context, u Unit, in Input) (Records, error) {
	rc, err := in.Open(ctx, u.Files[0])
	if err != nil {
		return nil, err
	}
	b := in.seq.get()
	r, err := seqfile.NewReaderWith(rc, in.Path(u.Files[0]), b)
	if err != nil {
		in.seq.put(b)
		rc.Close()
		return nil, fmt.Errorf("loader: %w", err)
	}
	return seqRecords{r, rc, in.seq, b}, nil
}

type seqRecords struct {
	*seqfile.Reader
	rc   io.Closer
	pool *seqBuffers
	b    *seqfile.Buffers
}

// Close hands the Reader's buffers on to the load's next file and closes
// the file.
func (s seqRecords) Close() error {
	s.Reader.Release()
	s.pool.put(s.b)
	return s.rc.Close()
}

// seqBuffers hands the buffers a SequenceFile Reader decodes into from
// each file of a load to the next (seqfile.Buffers): a block-compressed
// file's grow to a megabyte or more, which every file made anew cost a
// load of 1M keys in 8 Snappy files about 30 MB of allocations and
// collections. It keeps as many as read at once. A nil *seqBuffers lends
// nothing.
type seqBuffers struct {
	free chan *seqfile.Buffers
}

func newSeqBuffers(n int) *seqBuffers {
	return &seqBuffers{free: make(chan *seqfile.Buffers, n)}
}

func (p *seqBuffers) get() *seqfile.Buffers {
	if p == nil {
		return nil
	}
	select {
	case b := <-p.free:
		return b
	default:
		return new(seqfile.Buffers)
	}
}

func (p *seqBuffers) put(b *seqfile.Buffers) {
	if p == nil || b == nil {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}
