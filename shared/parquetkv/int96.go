package parquetkv

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// int96Column reads a top-level INT96 column (Spark's and Impala's
// timestamps: nanoseconds of the day, then the Julian day, little-endian)
// in step with the batches arrow-go decodes. arrow-go converts INT96 to
// int64 nanoseconds and fails outside 1677-2262, a range Spark's
// microsecond timestamps exceed.
type int96Column struct {
	leaf   int
	maxDef int16
	cr     *file.Int96ColumnChunkReader

	vals []parquet.Int96 // this batch's values, packed (no nulls)
	defs []int16         // this batch's definition levels
	idx  []int32         // row -> index in vals, or -1 for null
}

func (c *int96Column) open(rg *file.RowGroupReader) error {
	cr, err := rg.Column(c.leaf)
	if err != nil {
		return err
	}
	icr, ok := cr.(*file.Int96ColumnChunkReader)
	if !ok {
		return fmt.Errorf("column %d: not an INT96 column", c.leaf)
	}
	c.cr = icr
	return nil
}

// read reads the next n rows.
func (c *int96Column) read(n int) error {
	if c.cr == nil {
		return fmt.Errorf("INT96 column read past its row group")
	}
	c.vals = growTo(c.vals, n)
	c.defs = growTo(c.defs, n)
	c.idx = growTo(c.idx, n)
	rows, vals := 0, 0
	for rows < n {
		total, nv, err := c.cr.ReadBatch(int64(n-rows), c.vals[vals:], c.defs[rows:], nil)
		if err != nil {
			return err
		}
		if total == 0 {
			return fmt.Errorf("INT96 column ends after %d of %d rows", rows, n)
		}
		for k := 0; k < int(total); k++ {
			if c.maxDef == 0 || c.defs[rows+k] == c.maxDef {
				c.idx[rows+k] = int32(vals)
				vals++
			} else {
				c.idx[rows+k] = -1
			}
		}
		if vals != 0 && vals > len(c.vals) || vals < nv {
			return fmt.Errorf("INT96 column: %d values for %d present rows", nv, vals)
		}
		rows += int(total)
	}
	return nil
}

// finish checks the column ended with its row group.
func (c *int96Column) finish() error {
	if c.cr != nil && c.cr.HasNext() {
		c.cr = nil
		return fmt.Errorf("INT96 column %d holds more rows than its row group", c.leaf)
	}
	c.cr = nil
	return nil
}

func (c *int96Column) appendJSON(dst []byte, row int) []byte {
	k := c.idx[row]
	if k < 0 {
		return append(dst, "null"...)
	}
	return appendTime(dst, int96Time(c.vals[k]), time.RFC3339Nano)
}

// int96Time converts an INT96 timestamp without a detour through int64
// nanoseconds, so every Julian day gives its instant.
func int96Time(v parquet.Int96) time.Time {
	nanos := binary.LittleEndian.Uint64(v[:8])
	day := int64(binary.LittleEndian.Uint32(v[8:]))
	return time.Unix((day-julianUnixEpoch)*86400, 0).Add(time.Duration(nanos % uint64(24*time.Hour))).
		Add(time.Duration(nanos/uint64(24*time.Hour)) * 24 * time.Hour)
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
