package versions

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/storaged/builder"
	"spangle/storaged/repair"
	"spangle/storaged/table"
)

// Lookup errors of Acquire and Get.
var (
	// ErrNoDB: the node serves no version of the db.
	ErrNoDB = errors.New("versions: no such db")
	// ErrVersionNotHeld: the pinned version is not (or no longer) served.
	ErrVersionNotHeld = errors.New("versions: version not held")
	// ErrPartitionNotHeld: this node does not hold the key's partition.
	ErrPartitionNotHeld = errors.New("versions: partition not held")
	// ErrNoPeer: no other node serves the partition to copy it from
	// (what Hooks.CopyPartition returns then, wrapped). It is the
	// builder's, which builds such a partition from the source without
	// logging it.
	ErrNoPeer = builder.ErrNoPeer
	// ErrNotFound: the version has no such key.
	ErrNotFound = table.ErrNotFound
	// ErrPartitionCorrupt: the key's block in this node's copy of the
	// partition does not read back as written (bit rot, a bad disk). The
	// partition is being rebuilt; another replica, or this node once the
	// rebuilt copy replaces the bad one, answers the key.
	ErrPartitionCorrupt = errors.New("versions: partition corrupt here; being rebuilt")
)

// Version is one servable version of a db. It is safe for concurrent use
// between Acquire and Release.
type Version struct {
	DB, Name string
	// NumPartitions is the version's partition count.
	NumPartitions int
	// Created is when the source version was written; Last-Modified.
	Created time.Time
	// ContentType, when set, is the Content-Type of the version's values
	// (a Parquet db's JSON or its _FORMAT content_type); empty leaves it to
	// the server's setting.
	ContentType string

	parts []*table.Partition // by partition; nil when not held
	held  []int
	// corrupt is set for a partition once a lookup found a bad block in
	// it, so the manager hears of it once; reports is where it hears.
	corrupt []atomic.Bool
	reports chan<- repair.Report

	// Header values, computed once so the request path assigns them to
	// the response header map without allocating.
	HeaderVersion      []string
	HeaderLastModified []string
	// HeaderContentType is ContentType as a header value; nil when unset.
	HeaderContentType []string

	refs     atomic.Int64
	closing  atomic.Bool
	current  atomic.Bool  // set while it is the db's active version
	lastUsed atomic.Int64 // unix nanos of the last pinned use while not current
}

func newVersion(db, name string, n int, created time.Time, ctype string, parts []*table.Partition, reports chan<- repair.Report) *Version {
	v := &Version{DB: db, Name: name, NumPartitions: n, Created: created, ContentType: ctype, parts: parts,
		corrupt: make([]atomic.Bool, n), reports: reports,
		HeaderVersion:      []string{name},
		HeaderLastModified: []string{created.UTC().Format(http.TimeFormat)},
	}
	if ctype != "" {
		v.HeaderContentType = []string{ctype}
	}
	for p, part := range parts {
		if part != nil {
			v.held = append(v.held, p)
		}
	}
	return v
}

// Held returns the partitions the node serves, ascending.
func (v *Version) Held() []int { return append([]int(nil), v.held...) }

// Get appends the value of key to dst and returns the result, or
// ErrNotFound, ErrPartitionNotHeld or ErrPartitionCorrupt.
func (v *Version) Get(dst, key []byte) ([]byte, error) {
	i := partitioner.Partition(key, v.NumPartitions)
	p := v.parts[i]
	if p == nil {
		return dst, ErrPartitionNotHeld
	}
	val, err := p.Get(dst, key)
	if err != nil && errors.Is(err, table.ErrCorrupt) {
		return val, v.corruptBlock(i, p, err)
	}
	return val, err
}

// Prefetch readies lookups of many keys at once (table.Prefetch): a
// batch adds its keys with AddPrefetch, runs it, takes each key's value
// from it (Prefetch.Get) or, where it has none, from Get, then resets
// it.
type Prefetch = table.Prefetch

// AddPrefetch adds key to f and returns its place for f.Get, or -1: its
// block, when a Get of key will search a mapped table of a partition
// held here. key is kept until f.Reset.
func (v *Version) AddPrefetch(f *Prefetch, key []byte) int {
	if p := v.parts[partitioner.Partition(key, v.NumPartitions)]; p != nil {
		return p.AddPrefetch(f, key)
	}
	return -1
}

// corruptBlock tells the manager, once per partition and without
// blocking, that a lookup found a bad block in partition i, and returns
// the lookup's error. The partition's other blocks keep answering: each
// block's checksum is checked whenever it is read from disk.
func (v *Version) corruptBlock(i int, p *table.Partition, err error) error {
	if v.reports != nil && v.corrupt[i].CompareAndSwap(false, true) {
		select {
		case v.reports <- repair.Report{Partition: dbver.Of(v.DB, v.Name).Partition(i), Part: p, Err: err, By: repair.FoundByLookup}:
		default:
			v.corrupt[i].Store(false) // the manager is busy: the next lookup tells it
		}
	}
	return fmt.Errorf("%w: %s/%s partition %d: %w", ErrPartitionCorrupt, v.DB, v.Name, i, err)
}

// Release ends a use begun by Acquire.
func (v *Version) Release() { v.refs.Add(-1) }

// acquire takes a reference unless the version is closing. now is read
// only for a version that is not the db's active one (a pinned use): a
// lookup of the active version, nearly every one, reads no clock.
func (v *Version) acquire(now func() time.Time) bool {
	v.refs.Add(1)
	if v.closing.Load() {
		v.refs.Add(-1)
		return false
	}
	if !v.current.Load() {
		v.lastUsed.Store(now().UnixNano())
	}
	return true
}

func (v *Version) close() {
	for _, p := range v.parts {
		if p != nil {
			p.Close()
		}
	}
}

func (v *Version) String() string {
	return v.DB + "/" + v.Name + " (" + strconv.Itoa(v.NumPartitions) + " partitions)"
}

// view is the immutable snapshot the request path reads.
type view map[string]*dbView

type dbView struct {
	current *Version
	byName  map[string]*Version
}

// Acquire returns the version that answers a request for db: the pinned
// one if pinned is not "", else the active one. The caller must Release
// it. Errors: ErrNoDB, ErrVersionNotHeld.
func (m *Manager) Acquire(db, pinned string) (*Version, error) {
	v, err := m.acquire(db, pinned)
	if errors.Is(err, errClosing) {
		// The snapshot read was replaced meanwhile (a rebuilt copy
		// swapped in): the new one answers.
		v, err = m.acquire(db, pinned)
	}
	if errors.Is(err, errClosing) {
		return nil, ErrVersionNotHeld
	}
	return v, err
}

// errClosing: the version found was closing; a newer snapshot may hold
// its replacement.
var errClosing = errors.New("versions: closing")

func (m *Manager) acquire(db, pinned string) (*Version, error) {
	vw := *m.view.Load()
	d := vw[db]
	if d == nil {
		if pinned != "" {
			// A pinned request comes from a router that saw the version
			// elsewhere: "not here", never "no such key".
			return nil, ErrVersionNotHeld
		}
		return nil, ErrNoDB
	}
	var v *Version
	if pinned == "" {
		v = d.current
		if v == nil {
			return nil, ErrNoDB
		}
	} else if v = d.byName[pinned]; v == nil {
		return nil, ErrVersionNotHeld
	}
	if !v.acquire(m.opts.Now) {
		return nil, errClosing
	}
	return v, nil
}

// CurrentVersion returns the name of db's active version, or "".
func (m *Manager) CurrentVersion(db string) string {
	if d := (*m.view.Load())[db]; d != nil && d.current != nil {
		return d.current.Name
	}
	return ""
}

// openedVersion wraps the partitions a build opened in a servable
// Version, whose lookups report corrupt blocks to reports
// (storaged/repair).
func openedVersion(db, name string, o builder.Opened, reports chan<- repair.Report) *Version {
	return newVersion(db, name, o.N, o.Created, o.ContentType, o.Parts, reports)
}
