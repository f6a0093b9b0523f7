package integration

import (
	"fmt"
	"spangle/shared/versiontest"
	"testing"
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
// keys and values, and a _SUCCESS file, appearing at once.
func writeVersion(t testing.TB, root, db, version string, parts, keys int) {
	t.Helper()
	recs := make([]versiontest.Record, keys)
	for i := range recs {
		k := keyName(i)
		recs[i] = versiontest.Record{Key: []byte(k), Value: []byte(valueOf(version, k))}
	}
	versiontest.For(t).Write(root, db, version, versiontest.Options{Files: parts}, recs)
}
