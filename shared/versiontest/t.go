package versiontest

import "testing"

// T writes versions for one test and fails it on any error.
type T struct{ t testing.TB }

// For returns the writer of test t.
func For(t testing.TB) T { return T{t} }

// Write is Write for a test; it returns root/db/version.
func (w T) Write(root, db, version string, o Options, recs []Record) string {
	w.t.Helper()
	out, err := Write(root, db, version, o, recs)
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Dir
}

// File is WriteRecords for a test.
func (w T) File(path string, o Options, recs []Record) {
	w.t.Helper()
	if err := WriteRecords(path, o, recs); err != nil {
		w.t.Fatal(err)
	}
}
