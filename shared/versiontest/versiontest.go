package versiontest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
)

// Record is one key and value.
type Record struct{ Key, Value []byte }

// Format is an input format a version's files are written in.
type Format int

const (
	// SequenceFile writes part-NNNNN SequenceFiles of BytesWritable keys
	// and values.
	SequenceFile Format = iota
	// Sparkey writes a pair part-NNNNN.spl and part-NNNNN.spi.sz per file.
	Sparkey
	// Parquet writes Spark-named part-NNNNN-0f1e-c000.snappy.parquet
	// files with a string column "key" and a binary column "value", in
	// Snappy pages: what the loader reads with no _FORMAT marker.
	Parquet
)

// Layout says how Write spreads a slice of records over the files.
type Layout int

const (
	// Sharded puts the records of partition p (partitioner.Partition with
	// the file count) in file p, as a Hadoop job with spangle's
	// partitioner writes them.
	Sharded Layout = iota
	// RoundRobin deals the records over the files in the given order.
	RoundRobin
)

// Options describes a version to write. Zero values are the defaults
// noted.
type Options struct {
	// Format of the files; default SequenceFile.
	Format Format
	// Files is the data file count; default 1.
	Files int
	// Layout spreads the records of Write; default Sharded. WriteFunc's
	// caller places records itself.
	Layout Layout
	// Sort sorts each file's records by key, as a reducer's output is;
	// otherwise they keep the order given.
	Sort bool
	// InPlace writes straight into root/db/version; by default the files
	// are written in a hidden directory beside it and renamed into place,
	// so a daemon scanning meanwhile sees the whole version or none of it.
	InPlace bool
	// NoSuccess writes no _SUCCESS marker.
	NoSuccess bool
	// SeqFile are the SequenceFile writer's options.
	SeqFile seqfile.WriterOptions
	// Sparkey are the Sparkey writer's options.
	Sparkey sparkey.WriterOptions
	// Amend, if set, runs on the directory holding the written files
	// before the version appears (a test damages one of them there).
	Amend func(dir string) error
}

// Written is what Write wrote.
type Written struct {
	// Dir is root/db/version.
	Dir string
	// Files are the data files' paths in Dir, file i at index i (for
	// Sparkey, the logs; each index is beside its log).
	Files []string
	// Bytes is the data files' total size (with Sparkey's indexes).
	Bytes int64
}

// FileName is the name of data file i of a version in format f.
func FileName(f Format, i int) string {
	switch f {
	case Sparkey:
		return fmt.Sprintf("part-%05d.spl", i)
	case Parquet:
		return fmt.Sprintf("part-%05d-0f1e-c000.snappy.parquet", i)
	}
	return fmt.Sprintf("part-%05d", i)
}

// Write writes recs as root/db/version, spread over the files by
// o.Layout, and returns what it wrote.
func Write(root, db, version string, o Options, recs []Record) (*Written, error) {
	files := spread(recs, max(o.Files, 1), o.Layout)
	if o.Sort {
		for _, fr := range files {
			sort.SliceStable(fr, func(a, b int) bool { return string(fr[a].Key) < string(fr[b].Key) })
		}
	}
	return WriteFunc(root, db, version, o, func(file int, put func(k, v []byte) error) error {
		for _, r := range files[file] {
			if err := put(r.Key, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
}

// spread puts recs in n files by layout.
func spread(recs []Record, n int, layout Layout) [][]Record {
	files := make([][]Record, n)
	for i, r := range recs {
		f := i % n
		if layout == Sharded {
			f = partitioner.Partition(r.Key, n)
		}
		files[f] = append(files[f], r)
	}
	return files
}

// WriteFunc writes root/db/version with o.Files files, calling each once
// per file, all files at once (one goroutine each), to put that file's
// records in order. o.Layout and o.Sort do not apply. It is for datasets
// too large to hold as a slice.
func WriteFunc(root, db, version string, o Options, each func(file int, put func(k, v []byte) error) error) (*Written, error) {
	n := max(o.Files, 1)
	final := filepath.Join(root, db, version)
	dir := final
	if o.InPlace {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("versiontest: %w", err)
		}
	} else {
		if _, err := os.Stat(final); err == nil {
			return nil, fmt.Errorf("versiontest: %s exists", final)
		}
		var err error
		if dir, err = hiddenDir(filepath.Dir(final), version); err != nil {
			return nil, err
		}
	}
	w := &Written{Dir: final}
	sizes := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for f := 0; f < n; f++ {
		w.Files = append(w.Files, filepath.Join(final, FileName(o.Format, f)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[f], errs[f] = WriteFile(filepath.Join(dir, FileName(o.Format, f)), o, func(put func(k, v []byte) error) error {
				return each(f, put)
			})
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil && !o.NoSuccess {
		if werr := os.WriteFile(filepath.Join(dir, "_SUCCESS"), nil, 0o644); werr != nil {
			err = fmt.Errorf("versiontest: %w", werr)
		}
	}
	if err == nil && o.Amend != nil {
		err = o.Amend(dir)
	}
	if err == nil && dir != final {
		if rerr := os.Rename(dir, final); rerr != nil {
			err = fmt.Errorf("versiontest: %w", rerr)
		}
	}
	if err != nil {
		if dir != final {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	for _, s := range sizes {
		w.Bytes += s
	}
	return w, nil
}

// hiddenDir makes a new directory in parent whose name Hadoop's rules
// hide (it starts with '.'), for version's files while they are written.
func hiddenDir(parent, version string) (string, error) {
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("versiontest: %w", err)
	}
	dir := filepath.Join(parent, ".tmp-"+version+"-"+hex.EncodeToString(suffix[:]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("versiontest: %w", err)
	}
	return dir, nil
}

// Numbered returns n records whose key and value are keyFormat and
// valueFormat (fmt verbs) applied to the record's number, 0 to n-1.
func Numbered(n int, keyFormat, valueFormat string) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Key: fmt.Appendf(nil, keyFormat, i), Value: fmt.Appendf(nil, valueFormat, i)}
	}
	return recs
}
