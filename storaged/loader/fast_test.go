package loader

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"spangle/shared/parquetkv"
	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/storaged/internal/testutil"
)

// partitionKeys returns n keys of partition p of 2, ascending.
func partitionKeys(p, n int, prefix string) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("%s%06d", prefix, i)
		if partitioner.Partition([]byte(k), 2) == p {
			keys = append(keys, k)
		}
	}
	return keys
}

func dupSpec(t *testing.T, dup string) []Format {
	t.Helper()
	f, err := parquetkv.ParseFormat([]byte(fmt.Sprintf("key_column = \"id\"\nvalue_column = \"body\"\nduplicates = %q\n", dup)))
	if err != nil {
		t.Fatal(err)
	}
	return WithParquet(nil, f)
}

// TestDedupFastPath: Parquet files that each hold one sorted partition
// stream into their partitions (no buffer, no sort) even though the load
// resolves duplicates, and equal adjacent keys in such a file are still
// resolved as the policy says, the rows named in the error.
func TestDedupFastPath(t *testing.T) {
	root := t.TempDir()
	var files [2][][2]string
	for p := range 2 {
		for _, k := range partitionKeys(p, 3000, "k") {
			files[p] = append(files[p], [2]string{k, "v" + k})
		}
	}
	// Rows 2002-2004 of the first file hold one key, and rows 1024 and
	// 1025 another: the second of them is the record that starts the run
	// with the pendingRecords before it.
	dup := files[0][2000][0]
	files[0] = slices.Insert(files[0], 2001, [2]string{dup, "second"}, [2]string{dup, "third"})
	bdup := files[0][1023][0]
	files[0] = slices.Insert(files[0], 1024, [2]string{bdup, "boundary"})
	writeParquetRows(t, root, "db", "v1", "part-00000-c000.parquet", files[0])
	writeParquetRows(t, root, "db", "v1", "part-00001-c000.parquet", files[1])

	_, _, err := load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, "error"), SpillBytes: 4 << 10})
	if !errors.Is(err, ErrDuplicateKey) || !contains(err.Error(), "part-00000-c000.parquet record 1024", "part-00000-c000.parquet record 1025") {
		t.Fatalf("err %v: want ErrDuplicateKey naming rows 1024 and 1025", err)
	}
	for policy, want := range map[string][2]string{"first": {"v" + dup, "v" + bdup}, "last": {"third", "boundary"}} {
		res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, policy), SpillBytes: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if res.FastFiles != 2 || res.Runs != 2 || res.Records != 6003 || res.Duplicates != 3 {
			t.Fatalf("%s: %+v: want both files on the fast path, one run each, three duplicates", policy, res)
		}
		if v, err := get(parts, []byte(dup)); err != nil || string(v) != want[0] {
			t.Fatalf("%s: %s = %q, %v; want %q", policy, dup, v, err, want[0])
		}
		if v, err := get(parts, []byte(bdup)); err != nil || string(v) != want[1] {
			t.Fatalf("%s: %s = %q, %v; want %q", policy, bdup, v, err, want[1])
		}
		for p := range 2 {
			for _, r := range files[p] {
				if r[0] == dup || r[0] == bdup {
					continue
				}
				if v, err := get(parts, []byte(r[0])); err != nil || string(v) != r[1] {
					t.Fatalf("%s = %q, %v", r[0], v, err)
				}
			}
		}
	}
}

// TestDedupFastPathMixed: when a partition streamed by one file also gets
// records from elsewhere (another file with keys of every partition, or
// the same file's rows after its order breaks), the streamed run is
// dropped and its rows read again, so duplicates across the two are
// still found, with the right rows and the right winner.
func TestDedupFastPathMixed(t *testing.T) {
	for _, c := range []struct {
		name string
		// late: the duplicate is in the sorted file's own unsorted tail,
		// not in a second file.
		late bool
	}{{"second file", false}, {"late break", true}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			var sorted, other [][2]string
			for _, k := range partitionKeys(0, 3000, "k") {
				sorted = append(sorted, [2]string{k, "a" + k})
			}
			other = append(other, [2]string{"z-other-1", "x"}, [2]string{sorted[10][0], "b-dup"}, [2]string{"a-other", "y"})
			for _, k := range partitionKeys(1, 50, "m") {
				other = append(other, [2]string{k, "m"})
			}
			dupRow := 2 // in part-00001
			if c.late {
				sorted = append(sorted, other...)
				// The second file holds a key of the other partition
				// only, so that the first file streams its partition.
				other = [][2]string{{partitionKeys(1, 1, "o")[0], "o"}}
				dupRow = 3002
			}
			writeParquetRows(t, root, "db", "v1", "part-00000-c000.parquet", sorted)
			writeParquetRows(t, root, "db", "v1", "part-00001-c000.parquet", other)
			second := "part-00001-c000.parquet record 2"
			if c.late {
				second = fmt.Sprintf("part-00000-c000.parquet record %d", dupRow)
			}
			_, _, err := load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, "error"), Parallel: 2})
			if !errors.Is(err, ErrDuplicateKey) || !contains(err.Error(), "part-00000-c000.parquet record 11", second) {
				t.Fatalf("err %v: want ErrDuplicateKey naming row 11 and %s", err, second)
			}
			for policy, want := range map[string]string{"first": "a" + sorted[10][0], "last": "b-dup"} {
				for _, spill := range []int64{0, 8 << 10} {
					res, parts, err := load(t, root, "db", "v1", nil, Options{Formats: dupSpec(t, policy), Parallel: 2, SpillBytes: spill})
					if err != nil {
						t.Fatalf("%s: %v", policy, err)
					}
					if res.Duplicates != 1 || res.Records != int64(len(sorted)+len(other)) {
						t.Fatalf("%s: %+v", policy, res)
					}
					if v, err := get(parts, []byte(sorted[10][0])); err != nil || string(v) != want {
						t.Fatalf("%s: %q, %v; want %q", policy, v, err, want)
					}
					for _, r := range append(slices.Clone(sorted), other...) {
						if r[0] == sorted[10][0] {
							continue
						}
						if v, err := get(parts, []byte(r[0])); err != nil || string(v) != r[1] {
							t.Fatalf("%s: %s = %q, %v; want %q", policy, r[0], v, err, r[1])
						}
					}
				}
			}
		})
	}
}

// TestFastPathRotatesRuns: a unit longer than a run's bound writes
// several runs, one after another, in loads with and without duplicate
// resolution; duplicates across a run boundary are still found, and a
// partition that also gets other records drops all of them and is read
// again.
func TestFastPathRotatesRuns(t *testing.T) {
	root := t.TempDir()
	var sorted [][2]string
	for _, k := range partitionKeys(0, 3000, "k") {
		sorted = append(sorted, [2]string{k, "v" + k})
	}
	// Rows 1501 and 1502 hold one key, across a run boundary at 8 KiB.
	dup := sorted[1500][0]
	sorted = slices.Insert(sorted, 1501, [2]string{dup, "second"})
	writeParquetRows(t, root, "db", "v1", "part-00000-c000.parquet", sorted)
	writeParquetRows(t, root, "db", "v1", "part-00001-c000.parquet", [][2]string{{partitionKeys(1, 1, "o")[0], "o"}})
	opts := func(policy string) Options {
		return Options{Formats: dupSpec(t, policy), Parallel: 2, runBytes: 8 << 10}
	}
	_, _, err := load(t, root, "db", "v1", nil, opts("error"))
	if !errors.Is(err, ErrDuplicateKey) || !contains(err.Error(), "record 1501", "record 1502") {
		t.Fatalf("err %v", err)
	}
	res, parts, err := load(t, root, "db", "v1", nil, opts("last"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FastFiles != 2 || res.Runs < 5 || res.Duplicates != 1 {
		t.Fatalf("%+v: want both files fast, the first in several runs", res)
	}
	if v, err := get(parts, []byte(dup)); err != nil || string(v) != "second" {
		t.Fatalf("%s = %q, %v", dup, v, err)
	}
	for _, r := range sorted {
		if r[0] == dup {
			continue
		}
		if v, err := get(parts, []byte(r[0])); err != nil || string(v) != r[1] {
			t.Fatalf("%s = %q, %v", r[0], v, err)
		}
	}

	// A third file with keys of both partitions, one of them the sorted
	// file's: that file's runs are dropped and its rows read again.
	writeParquetRows(t, root, "db", "v1", "part-00002-c000.parquet", [][2]string{{partitionKeys(1, 2, "o")[1], "p"}, {sorted[2000][0], "third"}})
	f, _ := parquetkv.ParseFormat([]byte("key_column = \"id\"\nvalue_column = \"body\"\nduplicates = \"last\"\npartitions = 2\n"))
	res, parts, err = load(t, root, "db", "v1", nil, Options{Formats: WithParquet(nil, f), Parallel: 3, runBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicates != 2 {
		t.Fatalf("%+v: want 2 duplicates", res)
	}
	if v, err := get(parts, []byte(sorted[2000][0])); err != nil || string(v) != "third" {
		t.Fatalf("%q, %v; want the third file's", v, err)
	}
	if v, err := get(parts, []byte(sorted[10][0])); err != nil || string(v) != sorted[10][1] {
		t.Fatalf("%q, %v", v, err)
	}

	// Without duplicate resolution (SequenceFiles): runs rotate too.
	sroot := t.TempDir()
	recs := testutil.Records(3000, "v1")
	testutil.WriteVersion(t, sroot, "db", "v1", 3, testutil.Sharded, seqfile.WriterOptions{}, recs)
	res, sparts, err := load(t, sroot, "db", "v1", nil, Options{runBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.FastFiles != 3 || res.Runs <= 3 {
		t.Fatalf("%+v: want 3 fast files in more than 3 runs", res)
	}
	for _, r := range recs {
		if v, err := get(sparts, r.Key); err != nil || !bytes.Equal(v, r.Value) {
			t.Fatalf("%q = %q, %v", r.Key, v, err)
		}
	}
}
