package versiontest

import (
	"fmt"
	"os"
	"strings"

	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
)

// WriteFile writes one data file at path in o.Format (for Sparkey, path
// is the log NAME.spl and the index NAME.spi.sz goes beside it), with
// the records fill puts, in order. It returns the bytes written.
func WriteFile(path string, o Options, fill func(put func(k, v []byte) error) error) (int64, error) {
	var err error
	var size int64
	switch o.Format {
	case SequenceFile:
		size, err = writeSeqFile(path, o.SeqFile, fill)
	case Sparkey:
		size, err = writeSparkey(path, o.Sparkey, fill)
	case Parquet:
		size, err = writeParquet(path, fill)
	default:
		err = fmt.Errorf("unknown format %d", o.Format)
	}
	if err != nil {
		return 0, fmt.Errorf("versiontest: %s: %w", path, err)
	}
	return size, nil
}

// WriteRecords is WriteFile with the records of a slice.
func WriteRecords(path string, o Options, recs []Record) error {
	_, err := WriteFile(path, o, func(put func(k, v []byte) error) error {
		for _, r := range recs {
			if err := put(r.Key, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

func writeSeqFile(path string, opts seqfile.WriterOptions, fill func(put func(k, v []byte) error) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := seqfile.NewWriter(f, opts)
	if err != nil {
		return 0, err
	}
	if err := fill(w.Append); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return closeSized(f)
}

func writeSparkey(path string, opts sparkey.WriterOptions, fill func(put func(k, v []byte) error) error) (int64, error) {
	lf, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	xf, err := os.Create(strings.TrimSuffix(path, ".spl") + ".spi.sz")
	if err != nil {
		return 0, err
	}
	defer xf.Close()
	w, err := sparkey.NewWriter(lf, opts)
	if err != nil {
		return 0, err
	}
	if err := fill(w.Put); err != nil {
		return 0, err
	}
	if err := w.Close(xf); err != nil {
		return 0, err
	}
	ls, err := closeSized(lf)
	if err != nil {
		return 0, err
	}
	xs, err := closeSized(xf)
	return ls + xs, err
}

// closeSized closes f and returns its size.
func closeSized(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), f.Close()
}
