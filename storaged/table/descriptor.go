package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/syndtr/goleveldb/leveldb/journal"
)

// LevelDB version-edit tags this reader knows besides those the builder
// writes (table.go).
const (
	tagCompactPointer = 5
	tagDeleteTable    = 6
	tagPrevJournalNum = 9
)

// tableRef is one live table of a database, as its descriptor lists it.
type tableRef struct {
	level    int
	num      uint64
	smallest []byte // user keys
	largest  []byte
}

// readDescriptor reads the LevelDB descriptor (the MANIFEST file that
// CURRENT names) of the database in dir and returns its live tables in the
// order a lookup must try them: level 0 newest first (its tables may
// overlap and the newest wins), then each deeper level.
//
// A database whose write-ahead journal still holds records is refused:
// those records are in no table, and this reader reads only tables.
func readDescriptor(dir string) ([]tableRef, error) {
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	name := strings.TrimSuffix(string(cur), "\n")
	if !strings.HasPrefix(name, "MANIFEST-") || strings.ContainsAny(name, "/\\") {
		return nil, fmt.Errorf("%w: %s: CURRENT names %q", ErrCorrupt, dir, cur)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	defer f.Close()
	d := descriptor{live: map[[2]uint64]tableRef{}}
	jr := journal.NewReader(f, nil, true, true)
	for {
		r, err := jr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var rec []byte
		if err == nil {
			rec, err = io.ReadAll(r)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, dir, name, err)
		}
		if err := d.apply(rec); err != nil {
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, dir, name, err)
		}
	}
	if d.comparer != "" && d.comparer != bytewiseComparer {
		return nil, fmt.Errorf("table: %s: comparer %q, only %q is read", dir, d.comparer, bytewiseComparer)
	}
	for _, num := range []uint64{d.journal, d.prevJournal} {
		if num == 0 {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%06d.log", num)))
		if err == nil && fi.Size() > 0 {
			return nil, fmt.Errorf("table: %s: journal %06d.log holds records that are in no table", dir, num)
		}
	}
	refs := make([]tableRef, 0, len(d.live))
	for _, t := range d.live {
		refs = append(refs, t)
	}
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		switch {
		case a.level != b.level:
			return a.level < b.level
		case a.level == 0:
			return a.num > b.num
		}
		return bytes.Compare(a.smallest, b.smallest) < 0
	})
	return refs, nil
}

// tableFile is the name LevelDB gives table num in dir (older writers
// used .sst).
func tableFile(dir string, num uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%06d.ldb", num))
}

// tablePath returns the file of table num in dir, .ldb or the older .sst.
func tablePath(dir string, num uint64) string {
	p := tableFile(dir, num)
	if _, err := os.Stat(p); err != nil {
		alt := filepath.Join(dir, fmt.Sprintf("%06d.sst", num))
		if _, err := os.Stat(alt); err == nil {
			return alt
		}
	}
	return p
}

// descriptor is the state the version edits of a descriptor build up.
type descriptor struct {
	comparer             string
	journal, prevJournal uint64
	live                 map[[2]uint64]tableRef // by level and number
}

// apply decodes one version edit: a sequence of tagged fields.
func (d *descriptor) apply(rec []byte) error {
	var err error
	uv := func() uint64 {
		x, n := binary.Uvarint(rec)
		if n <= 0 {
			err = errors.New("bad varint in version edit")
			rec = nil
			return 0
		}
		rec = rec[n:]
		return x
	}
	bs := func() []byte {
		n := uv()
		if n > uint64(len(rec)) {
			err = errors.New("field runs past its version edit")
			rec = nil
			return nil
		}
		b := rec[:n:n]
		rec = rec[n:]
		return b
	}
	for len(rec) > 0 && err == nil {
		switch tag := uv(); tag {
		case tagComparer:
			d.comparer = string(bs())
		case tagJournalNum:
			d.journal = uv()
		case tagPrevJournalNum:
			d.prevJournal = uv()
		case tagNextFileNum, tagSeqNum:
			uv()
		case tagCompactPointer:
			uv()
			bs()
		case tagDeleteTable:
			level, num := uv(), uv()
			delete(d.live, [2]uint64{level, num})
		case tagAddTable:
			level, num := uv(), uv()
			uv() // size: the file's own
			imin, imax := bs(), bs()
			if err != nil {
				break
			}
			if len(imin) < 8 || len(imax) < 8 || level > 64 {
				return fmt.Errorf("bad table %d in version edit", num)
			}
			d.live[[2]uint64{level, num}] = tableRef{
				level: int(level), num: num,
				smallest: bytes.Clone(imin[:len(imin)-8]), largest: bytes.Clone(imax[:len(imax)-8]),
			}
		default:
			if err == nil {
				err = errors.New("unknown version edit tag " + strconv.FormatUint(tag, 10))
			}
		}
	}
	return err
}
