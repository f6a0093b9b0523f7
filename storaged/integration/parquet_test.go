package integration

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/parquetkv"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

const parquetDB = "pq"

// writeParquetDB copies a real Impala-written Parquet file (ids 0-7) into
// root/pq/version as a Spark-named part file, beside a _SUCCESS.
func writeParquetDB(t testing.TB, root, version, testFile string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.TestData(t), "parquet", testFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, parquetDB, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"part-00000-5f2a-c000.snappy.parquet": data, "_SUCCESS": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeParquetFormat(t testing.TB, root, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, parquetDB, parquetkv.FormatFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parquetScenario: a Parquet db with a _FORMAT serves rows as JSON; a bad
// _FORMAT loads nothing new and shows on /healthz while the version
// serves; a corrupt file fails its version with the file named.
func parquetScenario(t *testing.T, n *node, root string) {
	waitActive(t, 2*time.Minute, parquetDB, "v1", n)
	want := `{"int_col":1,"timestamp_col":"2009-04-01T00:01:00Z"}`
	if code, body, ver, err := n.get(parquetDB, "7"); err != nil || code != 200 || body != want || ver != "v1" {
		t.Fatalf("GET pq/7: %d %q %s %v; want %s", code, body, ver, err, want)
	}
	if _, _, ctype, err := getContentType(n, parquetDB, "7"); err != nil || ctype != parquetkv.ContentTypeJSON {
		t.Fatalf("GET pq/7: Content-Type %q, %v; want JSON's", ctype, err)
	}

	writeParquetFormat(t, root, "key_column = \"id\"\nvalue_colum = \"x\"\n")
	writeParquetDB(t, root, "v2", "alltypes_plain.parquet")
	waitFor(t, time.Minute, "_FORMAT error on /healthz", func() bool {
		return n.healthz()[parquetDB][parquetkv.FormatFile].State == wire.StateError
	})
	if h := n.healthz()[parquetDB]; h["v2"].State != "" {
		t.Fatalf("v2 considered under a bad _FORMAT: %+v", h)
	}
	if code, body, _, err := n.get(parquetDB, "7"); err != nil || code != 200 || body != want {
		t.Fatalf("GET pq/7 under a bad _FORMAT: %d %q %v", code, body, err)
	}

	writeParquetFormat(t, root, "key_column = \"id\"\nvalue_column = \"string_col\"\n")
	waitActive(t, 2*time.Minute, parquetDB, "v2", n)
	if code, body, ver, err := n.get(parquetDB, "6"); err != nil || code != 200 || body != "0" || ver != "v2" {
		t.Fatalf("GET pq/6 from v2: %d %q %s %v", code, body, ver, err)
	}

	writeParquetDB(t, root, "v3", "datapage_v1-corrupt-checksum.parquet")
	writeParquetFormat(t, root, "key_column = \"a\"\n")
	var reason string
	waitFor(t, 2*time.Minute, "v3 in ERROR", func() bool {
		h := n.healthz()[parquetDB]["v3"]
		reason = h.Reason
		return h.State == wire.StateError
	})
	if !strings.Contains(reason, "part-00000-5f2a-c000.snappy.parquet") || !strings.Contains(reason, "CRC mismatch") {
		t.Errorf("reason %q: want the file and the CRC mismatch", reason)
	}
	if code, body, _, err := n.get(parquetDB, "6"); err != nil || code != 200 || body != "0" {
		t.Fatalf("GET pq/6 while v3 failed: %d %q %v", code, body, err)
	}

	// v4 holds every row twice, in two files: by default the version
	// fails, naming a key and both files, and v2 serves on.
	writeParquetFormat(t, root, "key_column = \"id\"\nvalue_column = \"string_col\"\n")
	v4 := filepath.Join(root, parquetDB, "v4")
	if err := os.MkdirAll(v4, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"part-00000-5f2a-c000.snappy.parquet", "part-00001-5f2a-c000.snappy.parquet"} {
		copyFile(t, filepath.Join(testutil.TestData(t), "parquet", "alltypes_plain.parquet"), filepath.Join(v4, name))
	}
	if err := os.WriteFile(filepath.Join(v4, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "v4 in ERROR", func() bool {
		h := n.healthz()[parquetDB]["v4"]
		reason = h.Reason
		return h.State == wire.StateError
	})
	if !strings.Contains(reason, "duplicate key") || !strings.Contains(reason, "part-00000-5f2a-c000.snappy.parquet record") ||
		!strings.Contains(reason, "part-00001-5f2a-c000.snappy.parquet record") {
		t.Errorf("reason %q: want the duplicate key and both files", reason)
	}
	if code, body, ver, err := n.get(parquetDB, "6"); err != nil || code != 200 || body != "0" || ver != "v2" {
		t.Fatalf("GET pq/6 while v4 failed: %d %q %s %v", code, body, ver, err)
	}
	// A marker that says which row wins loads the failed version again,
	// with the partition count and the content type it names.
	writeParquetFormat(t, root, "key_column = \"id\"\nvalue_column = \"string_col\"\nduplicates = \"last\"\npartitions = 3\ncontent_type = \"text/plain; charset=utf-8\"\n")
	waitActive(t, 2*time.Minute, parquetDB, "v4", n)
	if code, body, ctype, err := getContentType(n, parquetDB, "6"); err != nil || code != 200 || body != "0" || ctype != "text/plain; charset=utf-8" {
		t.Fatalf("GET pq/6 from v4: %d %q %q %v", code, body, ctype, err)
	}
	if st, err := n.status(); err != nil || st.DBs[parquetDB].Versions["v4"].NumPartitions != 3 {
		t.Fatalf("v4's partitions: %v", err)
	}
}

// getContentType GETs db/key and returns the status, body and
// Content-Type.
func getContentType(n *node, db, key string) (int, string, string, error) {
	resp, err := client.Get("http://" + n.addr + "/" + db + "/" + key)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Content-Type"), err
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParquetStandalone runs the scenario on a real storaged process
// over a local root.
func TestParquetStandalone(t *testing.T) {
	root := t.TempDir()
	writeParquetDB(t, root, "v1", "alltypes_plain.parquet")
	writeParquetFormat(t, root, "key_column = \"id\"\ncolumns = [\"int_col\", \"timestamp_col\"]\n")
	n := startStandalone(t, root, t.TempDir(), "--refresh-period", "300ms")
	parquetScenario(t, n, root)
}

// TestParquetOnS3 runs it over the real S3 server: the marker is read
// with a GET and the object is copied locally before it is read.
func TestParquetOnS3(t *testing.T) {
	_, _, dir := s3Setup(t)
	writeParquetDB(t, dir, "v1", "alltypes_plain.parquet")
	writeParquetFormat(t, dir, "key_column = \"id\"\ncolumns = [\"int_col\", \"timestamp_col\"]\n")
	n := startOnS3(t)
	parquetScenario(t, n, dir)
}
