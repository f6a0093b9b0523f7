package fsync

import "os"

// Path fsyncs a file or directory by name: a new file's bytes, or a
// directory's list of names once a file in it was created or renamed.
func Path(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
