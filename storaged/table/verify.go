package table

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// verifyChunk is how many bytes of consecutive blocks VerifyPartition
// reads at once: large reads for the disk, one buffer for the whole walk.
const verifyChunk = 1 << 20

// VerifyPartition reads every block of the partition database in dir from
// disk and checks its checksum, as a scrub does: the data blocks, which
// lookups read only when asked for, and the index, filter and metaindex,
// which an open partition keeps in memory but a restart or a peer's copy
// reads again. It opens the files itself, so it does not disturb (nor
// need) the Partition serving dir, nor the block cache. pace, if not nil,
// is called with the bytes about to be read before each read, and its
// error stops the walk: it bounds the rate. A bad block is an error
// wrapping ErrCorrupt that names the table and the offset. Sparkey pairs
// served in place are checked too (verifySparkey).
func VerifyPartition(ctx context.Context, dir string, pace func(n int) error) error {
	refs, err := readDescriptor(dir)
	if err != nil {
		return fmt.Errorf("table: verifying %s: %w", dir, err)
	}
	var buf []byte
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("table: verifying %s: %w", dir, err)
		}
		// Opening checks the footer, the metaindex, the filter and the
		// index: what follows the data blocks, paced once read.
		t, err := openTable(tablePath(dir, ref.num), nil)
		if err != nil {
			return fmt.Errorf("table: verifying %s: %w", dir, err)
		}
		if pace != nil {
			err = pace(int(t.size - t.dataEnd()))
		}
		if err == nil {
			buf, err = t.verifyData(ctx, buf, pace)
		}
		t.close()
		if err != nil {
			return fmt.Errorf("table: verifying %s: %w", dir, err)
		}
	}
	if _, err := verifySparkey(ctx, dir, buf, pace); err != nil {
		return fmt.Errorf("table: verifying %s: %w", dir, err)
	}
	return nil
}

// dataEnd is where the table's last data block (and its trailer) ends.
func (t *sstable) dataEnd() uint64 {
	if len(t.handles) == 0 {
		return 0
	}
	last := t.handles[len(t.handles)-1]
	return min(last.offset+last.size+blockTrailerLen, t.size)
}

// verifyData checks the checksum of every data block, reading runs of
// adjacent blocks up to verifyChunk at once into buf, which it returns
// (grown) for the next table.
func (t *sstable) verifyData(ctx context.Context, buf []byte, pace func(n int) error) ([]byte, error) {
	for i := 0; i < len(t.handles); {
		if err := ctx.Err(); err != nil {
			return buf, err
		}
		// Blocks j in [i, k) are adjacent in the file: one read.
		start := t.handles[i].offset
		end := start + t.handles[i].size + blockTrailerLen
		k := i + 1
		for k < len(t.handles) && t.handles[k].offset == end && t.handles[k].offset+t.handles[k].size+blockTrailerLen-start <= verifyChunk {
			end = t.handles[k].offset + t.handles[k].size + blockTrailerLen
			k++
		}
		n := int(end - start)
		if pace != nil {
			if err := pace(n); err != nil {
				return buf, err
			}
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := t.f.ReadAt(b, int64(start)); err != nil {
			return buf, t.corrupt(start, "reading %d bytes: %v", n, err)
		}
		for j := i; j < k; j++ {
			bh := t.handles[j]
			blk := b[bh.offset-start : bh.offset-start+bh.size+blockTrailerLen]
			if got, want := crc32.Checksum(blk[:bh.size+1], castagnoli), unmaskCRC(binary.LittleEndian.Uint32(blk[bh.size+1:])); got != want {
				return buf, t.corrupt(bh.offset, "block checksum %08x, want %08x", got, want)
			}
		}
		i = k
	}
	return buf, nil
}
