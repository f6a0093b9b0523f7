package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"spangle/shared/partitioner"
	"spangle/shared/sparkey"
	"spangle/shared/versiontest"
)

// Defaults of the generated database: the 100k keys in 8
// partitions.
const (
	DefaultDB         = "e2e"
	DefaultKeys       = 100_000
	DefaultPartitions = 8
)

// Key is the i-th key of every generated version.
func Key(i int) string { return fmt.Sprintf("key-%07d", i) }

// Value is the value of key in version: it names both, so an answer from
// the wrong version or for the wrong key is caught.
func Value(version, key string) string { return version + "/" + key + "/" + padding }

// padding makes values a realistic size without making them random.
const padding = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Spec describes one version to write. Zero values are the defaults.
type Spec struct {
	// DB defaults to DefaultDB.
	DB string
	// Version names the version directory; required.
	Version string
	// Keys defaults to DefaultKeys.
	Keys int
	// Partitions (data files) defaults to DefaultPartitions.
	Partitions int
	// Corrupt, when set, damages one data file in the middle of its
	// records, so loading the version fails.
	Corrupt bool
	// Sparkey writes the version as Sparkey pairs (part-NNNNN.spl with
	// part-NNNNN.spi.sz, the log in Snappy blocks), as a sequins job
	// would, instead of SequenceFiles.
	Sparkey bool
	// Parquet writes the version as Parquet files as Spark writes them
	// (part-NNNNN-...-c000.snappy.parquet, keys spread round-robin, not
	// pre-sharded), with the db's _FORMAT: values are the rows as JSON
	// (ParquetValue).
	Parquet bool
}

func (s *Spec) fill() error {
	if s.DB == "" {
		s.DB = DefaultDB
	}
	if s.Keys == 0 {
		s.Keys = DefaultKeys
	}
	if s.Partitions == 0 {
		s.Partitions = DefaultPartitions
	}
	if s.Version == "" || s.Keys < 0 || s.Partitions < 1 || s.Parquet && (s.Sparkey || s.Corrupt) {
		return fmt.Errorf("dataset: bad spec %+v", *s)
	}
	return nil
}

// Write writes the version into root/<db>/<version> and returns that
// directory. It writes into a hidden directory first and renames it, so
// a storaged re-scanning root never sees a half-written version. The
// files are pre-sharded, as a Hadoop job with the default partitioner
// writes them: file i holds the keys of partition i.
func Write(root string, s Spec) (string, error) {
	if err := s.fill(); err != nil {
		return "", err
	}
	if s.Parquet {
		return writeParquetVersion(root, s)
	}
	o := versiontest.Options{Files: s.Partitions, NoSuccess: true}
	if s.Sparkey {
		o.Format, o.Sparkey = versiontest.Sparkey, sparkey.WriterOptions{Compression: sparkey.Snappy}
	}
	if s.Corrupt {
		o.Amend = func(dir string) error {
			return corrupt(filepath.Join(dir, versiontest.FileName(o.Format, s.Partitions/2)))
		}
	}
	w, err := versiontest.Write(root, s.DB, s.Version, o, records(s))
	if err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	return w.Dir, nil
}

// records are the version's records, in key order.
func records(s Spec) []versiontest.Record {
	recs := make([]versiontest.Record, s.Keys)
	for i := range recs {
		k := Key(i)
		recs[i] = versiontest.Record{Key: []byte(k), Value: []byte(Value(s.Version, k))}
	}
	return recs
}

// corrupt overwrites the middle of the file with bytes no record starts
// with: a huge record length.
func corrupt(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if fi.Size() < 1024 {
		return errors.New("dataset: file too small to corrupt")
	}
	junk := make([]byte, 256)
	for i := range junk {
		junk[i] = 0x7f
	}
	if _, err := f.WriteAt(junk, fi.Size()/2); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

// Rewrite writes the data files of an existing version again in place,
// as a job that overwrites its output does: each file is written under a
// hidden name beside it and renamed over it, one after the other. The
// keys and values are those of s, so a reader checking them sees no
// change; the files' times (and sync markers) change, which is what a
// storaged notices.
func Rewrite(root string, s Spec) error {
	if err := s.fill(); err != nil {
		return err
	}
	dir := filepath.Join(root, s.DB, s.Version)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("dataset: rewriting: %w", err)
	}
	byPart := make([][]versiontest.Record, s.Partitions)
	for _, r := range records(s) {
		p := partitioner.Partition(r.Key, s.Partitions)
		byPart[p] = append(byPart[p], r)
	}
	for p, recs := range byPart {
		name := versiontest.FileName(versiontest.SequenceFile, p)
		tmp := filepath.Join(dir, "."+name+".rewrite")
		if err := versiontest.WriteRecords(tmp, versiontest.Options{}, recs); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("dataset: %w", err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("dataset: %w", err)
		}
	}
	return nil
}
