package table

import (
	"fmt"
	"os"
)

// preallocStep is how much disk space a table reserves ahead of its
// writes.
const preallocStep = 8 << 20

// preallocFile is a table file being written that reserves its disk space
// ahead of the writes, a step at a time. A filesystem that allocates on
// write (ext4's delayed allocation) otherwise reserves space page by page,
// which doubled the kernel's share of writing a table (125 MB in 8 files:
// 47 ms of CPU, 27 ms with space reserved). What was reserved past the
// last write is given back by finish. Where reserving is not supported,
// writes go on without it.
//
// A first write shorter than flushAt reserves nothing: sstWriter gathers
// flushAt bytes before it writes, so such a write is a whole table (every
// table of a small partition), which delayed allocation places at once.
// Reserving 8 MiB for a 4 KiB table and giving it back cost a search of
// the block groups, a truncate and, on a filesystem mounted with discard,
// a discard: fallocate and ftruncate were 18% of a node's CPU while it
// built 2,700 small partitions (perf, spanglescale's 500 dbs).
type preallocFile struct {
	f          *os.File
	off        int64 // bytes written
	reserved   int64 // the file's size as reserved so far
	noPrealloc bool
}

func (p *preallocFile) Write(b []byte) (int, error) {
	if p.off == 0 && len(b) < flushAt {
		p.noPrealloc = true
	}
	if end := p.off + int64(len(b)); !p.noPrealloc && end > p.reserved {
		size := max(p.reserved+preallocStep, end)
		if err := reserve(p.f, p.reserved, size-p.reserved); err != nil {
			p.noPrealloc = true
		} else {
			p.reserved = size
		}
	}
	n, err := p.f.Write(b)
	p.off += int64(n)
	return n, err
}

// finish cuts the file to what was written.
func (p *preallocFile) finish() error {
	if p.reserved > p.off {
		if err := p.f.Truncate(p.off); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	return nil
}
