package versions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/parquetkv"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

func writeParquetV(t *testing.T, root, db, version string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.TestData(t), "parquet", "alltypes_plain.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, db, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-00000-c000.snappy.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFormat(t *testing.T, root, db, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, db, parquetkv.FormatFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Parquet db is loaded as its _FORMAT says; a bad marker loads no new
// version, keeps the served one, and shows on Health and Status until it
// is fixed.
func TestParquetFormatMarker(t *testing.T) {
	root := t.TempDir()
	writeParquetV(t, root, "db", "v1")
	writeFormat(t, root, "db", "key_column = \"id\"\ncolumns = [\"int_col\"]\n")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	if val, name, err := h.get("db", "", "7"); err != nil || name != "v1" || val != `{"int_col":1}` {
		t.Fatalf("got %q from %s, %v", val, name, err)
	}

	writeFormat(t, root, "db", "key_colum = \"id\"\n")
	writeParquetV(t, root, "db", "v2")
	h.m.Scan(context.Background())
	time.Sleep(20 * time.Millisecond)
	h.m.Scan(context.Background())
	health := h.m.Views().Health()["db"]
	if _, ok := health["v2"]; ok {
		t.Fatalf("v2 considered under a bad _FORMAT: %+v", health)
	}
	if e := health[parquetkv.FormatFile]; e.State != wire.StateError || !strings.Contains(e.Reason, "unknown keys key_colum") {
		t.Fatalf("health %+v", health)
	}
	if st := h.m.Views().Status("db")["db"]; !strings.Contains(st.FormatError, "_FORMAT") || st.Current != "v1" {
		t.Fatalf("status %+v", st)
	}
	if val, _, err := h.get("db", "", "7"); err != nil || val != `{"int_col":1}` {
		t.Fatalf("served %q, %v", val, err)
	}

	writeFormat(t, root, "db", "key_column = \"id\"\nvalue_column = \"string_col\"\n")
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateActive)
	if val, name, err := h.get("db", "", "7"); err != nil || name != "v2" || val != "1" {
		t.Fatalf("v2: got %q from %s, %v", val, name, err)
	}
	if _, ok := h.m.Views().Health()["db"][parquetkv.FormatFile]; ok {
		t.Fatal("fixed marker still shown as an error")
	}
}
