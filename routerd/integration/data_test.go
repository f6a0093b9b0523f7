package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"spangle/shared/hashring"
	"spangle/shared/seqfile"
)

// keyName is the i-th key of the generated datasets. Some hold a '/' and
// a space, so the escaping of the whole path is exercised.
func keyName(i int) string {
	if i%10 == 3 {
		return fmt.Sprintf("k/%05d x", i)
	}
	return fmt.Sprintf("key-%05d", i)
}

// valueOf is the value of key in version: readers check both, so a value
// of another version can never pass unnoticed.
func valueOf(version, key string) string { return version + "=" + key }

// writeVersion writes <root>/<db>/<version>/ as a Hadoop job would:
// parts files pre-sharded by spangle's partition function, BytesWritable
// keys and values, and a _SUCCESS file.
func writeVersion(t testing.TB, root, db, version string, parts, keys int) {
	t.Helper()
	dir := filepath.Join(root, db, version)
	tmp := filepath.Join(root, db, "."+version+".tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	files := make([]*os.File, parts)
	writers := make([]*seqfile.Writer, parts)
	for p := range files {
		f, err := os.Create(filepath.Join(tmp, fmt.Sprintf("part-%05d", p)))
		if err != nil {
			t.Fatal(err)
		}
		w, err := seqfile.NewWriter(f, seqfile.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		files[p], writers[p] = f, w
	}
	for i := 0; i < keys; i++ {
		k := keyName(i)
		p := hashring.Partition([]byte(k), parts)
		if err := writers[p].Append([]byte(k), []byte(valueOf(version, k))); err != nil {
			t.Fatal(err)
		}
	}
	for p := range files {
		if err := writers[p].Close(); err != nil {
			t.Fatal(err)
		}
		if err := files[p].Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Appear at once, as a finished job's output does.
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
}
