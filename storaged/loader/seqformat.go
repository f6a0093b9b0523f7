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
	r, err := seqfile.NewReader(rc, in.Path(u.Files[0]))
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("loader: %w", err)
	}
	return seqRecords{r, rc}, nil
}

type seqRecords struct {
	*seqfile.Reader
	io.Closer
}
