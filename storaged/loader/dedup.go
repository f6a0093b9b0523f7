package loader

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Duplicates says what a load does with a key that two records hold.
type Duplicates int

// The policies of Layout.Duplicates.
const (
	// DuplicatesAny keeps one of the values, which one undefined: sequins'
	// rule, and the cheapest (SequenceFile, Sparkey).
	DuplicatesAny Duplicates = iota
	// DuplicatesError fails the load, naming the key and both records.
	DuplicatesError
	// DuplicatesFirst keeps the first record: by file name, then by its
	// place in the file.
	DuplicatesFirst
	// DuplicatesLast keeps the last record, in the same order.
	DuplicatesLast
)

// ErrDuplicateKey is returned when two records hold the same key and the
// layout says DuplicatesError. It is bad data: loading again fails again.
var ErrDuplicateKey = errors.New("loader: duplicate key")

// ordinals: a record's place in the version, compared when two records
// hold one key. The unit's index (units are in file name order) is above
// the record's number in its unit, counted from 1.
const ordRecordBits = 40

func ordinal(unit int, record int64) uint64 {
	return uint64(unit)<<ordRecordBits | uint64(record)
}

// where names the record at ord in errors: the file and the record's
// number in it (for Parquet, the row from 1).
func (st *loadState) where(ord uint64) string {
	u := int(ord >> ordRecordBits)
	n := ord & (1<<ordRecordBits - 1)
	if u >= len(st.layout.Units) {
		return "record " + strconv.FormatUint(ord, 10)
	}
	return st.in.Path(st.layout.Units[u].Files[0]) + " record " + strconv.FormatUint(n, 10)
}

// maxQuotedKey bounds how much of a key an error quotes.
const maxQuotedKey = 128

func quoteKey(k []byte) string {
	if len(k) > maxQuotedKey {
		return strconv.Quote(string(k[:maxQuotedKey])) + "..."
	}
	return strconv.Quote(string(k))
}

// deduper receives records in (key, ordinal) order and passes one record
// per key on to emit, as the policy says. Not safe for concurrent use.
type deduper struct {
	st     *loadState
	policy Duplicates
	emit   func(key, val []byte, ord uint64) error

	has        bool // key and ord are the last key's
	held       bool // "last": val is held back, a later record may replace it
	key, val   []byte
	ord        uint64
	duplicates int64
	// compared is set when the caller compares each key with the last
	// and calls same or next, never add: key is then kept only when a
	// held record needs it ("last").
	compared bool
}

// add passes on, holds or drops a record, as the policy says.
func (d *deduper) add(key, val []byte, ord uint64) error {
	if d.has && bytes.Equal(key, d.key) {
		return d.same(key, val, ord)
	}
	return d.next(key, val, ord)
}

// same takes a record of the last record's key.
func (d *deduper) same(key, val []byte, ord uint64) error {
	d.duplicates++
	switch d.policy {
	case DuplicatesFirst:
		return nil
	case DuplicatesLast:
		d.val = append(d.val[:0], val...)
		d.ord = ord
		return nil
	default:
		return fmt.Errorf("%w %s: in %s and in %s (the db's _FORMAT says duplicates = \"error\", the default; \"first\" or \"last\" keeps one of them)",
			ErrDuplicateKey, quoteKey(key), d.st.where(d.ord), d.st.where(ord))
	}
}

// next takes a record of a key other than the last record's.
func (d *deduper) next(key, val []byte, ord uint64) error {
	if d.policy != DuplicatesLast {
		// The first record of a key is the one kept (or the only one
		// allowed): it goes on at once, and only its key and ordinal are
		// kept, to compare.
		if !d.compared {
			d.key = append(d.key[:0], key...)
		}
		d.ord, d.has = ord, true
		return d.emit(key, val, ord)
	}
	if err := d.flush(); err != nil {
		return err
	}
	d.key = append(d.key[:0], key...)
	d.val = append(d.val[:0], val...)
	d.ord, d.has, d.held = ord, true, true
	return nil
}

// flush passes the held record on ("last" only).
func (d *deduper) flush() error {
	if !d.held {
		return nil
	}
	d.held = false
	return d.emit(d.key, d.val, d.ord)
}
