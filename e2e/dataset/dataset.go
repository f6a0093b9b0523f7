package dataset

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"spangle/shared/hashring"
	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
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
	dbDir := filepath.Join(root, s.DB)
	final := filepath.Join(dbDir, s.Version)
	if _, err := os.Stat(final); err == nil {
		return "", fmt.Errorf("dataset: %s exists", final)
	}
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	tmp := filepath.Join(dbDir, ".tmp-"+s.Version+"-"+hex.EncodeToString(suffix[:]))
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("dataset: %w", err)
	}
	if err := writeFiles(tmp, s); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("dataset: %w", err)
	}
	return final, nil
}

func writeFiles(dir string, s Spec) error {
	if s.Parquet {
		return writeParquetFiles(dir, s)
	}
	byPart := make([][]int, s.Partitions)
	for i := 0; i < s.Keys; i++ {
		p := hashring.Partition([]byte(Key(i)), s.Partitions)
		byPart[p] = append(byPart[p], i)
	}
	suffix := ""
	if s.Sparkey {
		suffix = ".spl"
	}
	for p, keys := range byPart {
		path := filepath.Join(dir, fmt.Sprintf("part-%05d", p)+suffix)
		write := writeFile
		if s.Sparkey {
			write = writeSparkey
		}
		if err := write(path, s.Version, keys); err != nil {
			return err
		}
	}
	if s.Corrupt {
		return corrupt(filepath.Join(dir, fmt.Sprintf("part-%05d", s.Partitions/2)+suffix))
	}
	return nil
}

// writeSparkey writes the log path (NAME.spl) and its index NAME.spi.sz.
func writeSparkey(path, version string, keys []int) (err error) {
	lf, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer func() {
		if cerr := lf.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("dataset: %w", cerr)
		}
	}()
	xf, err := os.Create(strings.TrimSuffix(path, ".spl") + ".spi.sz")
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer func() {
		if cerr := xf.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("dataset: %w", cerr)
		}
	}()
	w, err := sparkey.NewWriter(lf, sparkey.WriterOptions{Compression: sparkey.Snappy})
	if err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	for _, i := range keys {
		k := Key(i)
		if err := w.Put([]byte(k), []byte(Value(version, k))); err != nil {
			return fmt.Errorf("dataset: %s: %w", path, err)
		}
	}
	if err := w.Close(xf); err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	return nil
}

func writeFile(path, version string, keys []int) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("dataset: %w", cerr)
		}
	}()
	w, err := seqfile.NewWriter(f, seqfile.WriterOptions{})
	if err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	for _, i := range keys {
		k := Key(i)
		if err := w.Append([]byte(k), []byte(Value(version, k))); err != nil {
			return fmt.Errorf("dataset: %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("dataset: %s: %w", path, err)
	}
	return nil
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
	byPart := make([][]int, s.Partitions)
	for i := 0; i < s.Keys; i++ {
		p := hashring.Partition([]byte(Key(i)), s.Partitions)
		byPart[p] = append(byPart[p], i)
	}
	for p, keys := range byPart {
		name := fmt.Sprintf("part-%05d", p)
		tmp := filepath.Join(dir, "."+name+".rewrite")
		if err := writeFile(tmp, s.Version, keys); err != nil {
			os.Remove(tmp)
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("dataset: %w", err)
		}
	}
	return nil
}
