package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"spangle/shared/source"
)

// Backend is what the suite needs from a kind of root under test.
type Backend struct {
	// NewRoot returns an empty directory that the suite fills with plain
	// files, and a function that opens that directory as a root with the
	// given options. Each call gives a fresh directory.
	NewRoot func(t *testing.T) (dir string, open func(source.Options) (source.Source, error))
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, b Backend) {
	t.Run("Listing", func(t *testing.T) { testListing(t, b) })
	t.Run("RequireSuccess", func(t *testing.T) { testRequireSuccess(t, b) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, b) })
	t.Run("BadNames", func(t *testing.T) { testBadNames(t, b) })
	t.Run("FolderMarkers", func(t *testing.T) { testFolderMarkers(t, b) })
	t.Run("ManyVersionsAndFiles", func(t *testing.T) { testMany(t, b) })
	t.Run("StreamsLargeFile", func(t *testing.T) { testLarge(t, b) })
	t.Run("Pin", func(t *testing.T) { testPin(t, b) })
	t.Run("SuccessManifest", func(t *testing.T) { testSuccessManifest(t, b) })
	t.Run("Marker", func(t *testing.T) { testMarker(t, b) })
}

// Write writes body to dir/rel, making the directories on the way.
func Write(t testing.TB, dir, rel string, body []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadAll opens db/version/name and returns its content.
func ReadAll(ctx context.Context, src source.Source, db, version, name string) ([]byte, error) {
	rc, err := src.Open(ctx, db, version, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func open(t *testing.T, b Backend, fill map[string]string, opts source.Options) source.Source {
	t.Helper()
	dir, openRoot := b.NewRoot(t)
	for rel, body := range fill {
		Write(t, dir, rel, []byte(body))
	}
	src, err := openRoot(opts)
	if err != nil {
		t.Fatalf("sourcetest: opening the root: %v", err)
	}
	return src
}

func testListing(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"db1/v1/part-00000":        "a",
		"db1/v1/_SUCCESS":          "",
		"db1/v2/part-00000":        "bb",
		"db1/v2/part-00001":        "ccc",
		"db1/v2/.part-00000.crc":   "x",
		"db1/v2/_logs/history":     "x",
		"db1/v2/sub/part-00000":    "x",
		"db1/bad.name/part-00000":  "x",
		"db1/_tmp/part-00000":      "x",
		"_hidden/v1/part-00000":    "x",
		".dot/v1/part-00000":       "x",
		"file-not-dir":             "x",
		"db2/10/p":                 "x",
		"db2/9/p":                  "x",
		"bad name/v1/part-00000":   "x",
		"db1/v2/part-00002.gz":     "dddd",
		"db1/v1-file-not-dir":      "x",
		"db3/v1/_SUCCESS":          "",
		"db3/v1/_logs/history.txt": "x",
	}, source.Options{})
	dbs, err := src.DBs(ctx)
	if err != nil || !reflect.DeepEqual(dbs, []string{"db1", "db2", "db3"}) {
		t.Fatalf("DBs = %v, %v; want [db1 db2 db3]", dbs, err)
	}
	vs, err := src.Versions(ctx, "db1")
	if err != nil || !reflect.DeepEqual(vs, []string{"v1", "v2"}) || source.Newest(vs) != "v2" {
		t.Fatalf("Versions(db1) = %v, %v; want [v1 v2]", vs, err)
	}
	// Lexicographic, not numeric: "9" is newer than "10".
	if vs, err := src.Versions(ctx, "db2"); err != nil || source.Newest(vs) != "9" {
		t.Fatalf("Versions(db2) = %v, %v; want newest 9", vs, err)
	}
	files, err := src.Files(ctx, "db1", "v2")
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
		if f.ModTime.IsZero() {
			t.Errorf("Files: %s has no ModTime", f.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"part-00000", "part-00001", "part-00002.gz"}) ||
		files[0].Size != 2 || files[1].Size != 3 || files[2].Size != 4 {
		t.Fatalf("Files(db1, v2) = %+v; want part-00000 (2 bytes), part-00001 (3), part-00002.gz (4)", files)
	}
	again, err := src.Files(ctx, "db1", "v2")
	if err != nil || !reflect.DeepEqual(again, files) {
		t.Fatalf("a second listing differs: %+v, %v; first %+v", again, err, files)
	}
	// A version with only hidden files has no data files.
	if files, err := src.Files(ctx, "db3", "v1"); err != nil || len(files) != 0 {
		t.Fatalf("Files(db3, v1) = %+v, %v; want none", files, err)
	}
	for name, want := range map[string]string{"part-00000": "bb", "part-00001": "ccc"} {
		got, err := ReadAll(ctx, src, "db1", "v2", name)
		if err != nil || string(got) != want {
			t.Errorf("reading %s = %q, %v; want %q", name, got, err, want)
		}
	}
	if src.String() == "" {
		t.Error("String is empty")
	}
}

func testRequireSuccess(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"db/v1/part-00000": "a",
		"db/v1/_SUCCESS":   "",
		"db/v2/part-00000": "b",
		"db/v3/part-00000": "c",
		"db/v3/_SUCCESS":   "",
		"db/v4/part-00000": "d",
		"db/v4/_SUCCESS/x": "a directory named _SUCCESS is not the marker",
	}, source.Options{RequireSuccess: true})
	vs, err := src.Versions(ctx, "db")
	if err != nil || !reflect.DeepEqual(vs, []string{"v1", "v3"}) {
		t.Fatalf("Versions with require_success = %v, %v; want [v1 v3]", vs, err)
	}
	for v, want := range map[string]bool{"v1": true, "v2": false, "v3": true, "v4": false, "v5": false} {
		if got, err := src.Succeeded(ctx, "db", v); err != nil || got != want {
			t.Errorf("Succeeded(%s) = %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := src.Succeeded(ctx, "db", "../x"); !errors.Is(err, source.ErrNotFound) {
		t.Errorf("Succeeded(bad name) = %v; want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{"db/v1/part-00000": "a"}, source.Options{})
	if _, err := src.Versions(ctx, "nope"); !errors.Is(err, source.ErrNotFound) {
		t.Errorf("Versions of a missing db: %v; want ErrNotFound", err)
	}
	if _, err := src.Files(ctx, "db", "v9"); !errors.Is(err, source.ErrNotFound) {
		t.Errorf("Files of a missing version: %v; want ErrNotFound", err)
	}
	if _, err := ReadAll(ctx, src, "db", "v1", "part-00009"); !errors.Is(err, source.ErrNotFound) {
		t.Errorf("Open of a missing file: %v; want ErrNotFound", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := src.DBs(cctx); err == nil {
		t.Error("DBs with a cancelled context succeeded")
	}
}

func testBadNames(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"db/v1/part-00000": "ok",
		"db/v1/_SUCCESS":   "",
		"db/v1/.hidden":    "x",
		"secret":           "x",
	}, source.Options{})
	for _, name := range []string{"../v1/part-00000", "..", ".", "", "_SUCCESS", ".hidden", "/etc/passwd", "a/b", "../../secret"} {
		if _, err := ReadAll(ctx, src, "db", "v1", name); err == nil {
			t.Errorf("Open(db, v1, %q) succeeded", name)
		}
	}
	for _, db := range []string{"..", "../x", "", "_x", "a/b"} {
		if _, err := src.Files(ctx, db, "v1"); err == nil {
			t.Errorf("Files(%q, v1) succeeded", db)
		}
		if _, err := src.Versions(ctx, db); err == nil {
			t.Errorf("Versions(%q) succeeded", db)
		}
	}
	if _, err := src.Files(ctx, "db", ".."); err == nil {
		t.Error(`Files(db, "..") succeeded`)
	}
}

// testFolderMarkers: the "<dir>_$folder$" objects Hadoop's S3 file
// systems write beside each directory are never dbs, versions or files.
func testFolderMarkers(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"db_$folder$":          "",
		"db/v1_$folder$":       "",
		"db/v1/part-00000":     "a",
		"db/v1/_tmp_$folder$":  "",
		"db/v2_$folder$":       "",
		"other_$folder$/v1/p0": "x",
	}, source.Options{})
	dbs, err := src.DBs(ctx)
	if err != nil || !reflect.DeepEqual(dbs, []string{"db"}) {
		t.Fatalf("DBs = %v, %v; want [db]", dbs, err)
	}
	vs, err := src.Versions(ctx, "db")
	if err != nil || !reflect.DeepEqual(vs, []string{"v1"}) {
		t.Fatalf("Versions = %v, %v; want [v1]", vs, err)
	}
	files, err := src.Files(ctx, "db", "v1")
	if err != nil || len(files) != 1 || files[0].Name != "part-00000" {
		t.Fatalf("Files = %+v, %v; want only part-00000", files, err)
	}
}

// testMany: more versions and files than one S3 listing page (1,000)
// holds; each counted once.
func testMany(t *testing.T, b Backend) {
	ctx := context.Background()
	const n = 1003
	dir, openRoot := b.NewRoot(t)
	for i := 0; i < n; i++ {
		Write(t, dir, fmt.Sprintf("many/v%05d/part-00000", i), []byte("x"))
		Write(t, dir, fmt.Sprintf("wide/v1/part-%05d", i), []byte("y"))
	}
	src, err := openRoot(source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := src.Versions(ctx, "many")
	if err != nil || len(vs) != n || vs[0] != "v00000" || source.Newest(vs) != fmt.Sprintf("v%05d", n-1) {
		t.Fatalf("Versions: %d names (%v), want %d from v00000", len(vs), err, n)
	}
	files, err := src.Files(ctx, "wide", "v1")
	if err != nil || len(files) != n {
		t.Fatalf("Files: %d, %v; want %d", len(files), err, n)
	}
	for i, f := range files {
		if want := fmt.Sprintf("part-%05d", i); f.Name != want {
			t.Fatalf("Files[%d] = %s, want %s", i, f.Name, want)
		}
	}
}

func testLarge(t *testing.T, b Backend) {
	ctx := context.Background()
	dir, openRoot := b.NewRoot(t)
	body := make([]byte, 5<<20+123)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	Write(t, dir, "db/v1/part-00000", body)
	src, err := openRoot(source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(ctx, src, "db", "v1", "part-00000")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(body))
	}
}

// testPin: a db's _PIN marker names a version; no marker is "", and a
// malformed one is ErrBadPin, never a version.
func testPin(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"a/v1/part-00000": "a",
		"a/_PIN":          "v1\n",
		"b/v1/part-00000": "b",
		"c/v1/part-00000": "c",
		"c/_PIN":          "v1\nv2\n",
	}, source.Options{})
	for db, want := range map[string]string{"a": "v1", "b": ""} {
		if got, err := src.Pin(ctx, db); err != nil || got != want {
			t.Errorf("Pin(%s) = %q, %v; want %q", db, got, err, want)
		}
	}
	if got, err := src.Pin(ctx, "c"); !errors.Is(err, source.ErrBadPin) {
		t.Errorf("Pin(c) with two lines = %q, %v; want ErrBadPin", got, err)
	}
	if dbs, err := src.DBs(ctx); err != nil || len(dbs) != 3 {
		t.Errorf("DBs with markers = %v, %v; want the three dbs, no marker among them", dbs, err)
	}
}

// testMarker: a db's marker file (_FORMAT) is read whole; a missing one
// is nil, an empty one is empty, an oversized one and a bad name are
// errors.
func testMarker(t *testing.T, b Backend) {
	ctx := context.Background()
	src := open(t, b, map[string]string{
		"a/v1/part-00000.parquet": "a",
		"a/_FORMAT":               "key_column = \"id\"\n",
		"b/v1/part-00000":         "b",
		"c/_FORMAT":               "",
		"d/_FORMAT":               strings.Repeat("x", source.MaxMarkerSize+1),
	}, source.Options{})
	if got, err := src.Marker(ctx, "a", "_FORMAT"); err != nil || string(got) != "key_column = \"id\"\n" {
		t.Errorf("Marker(a) = %q, %v", got, err)
	}
	if got, err := src.Marker(ctx, "b", "_FORMAT"); err != nil || got != nil {
		t.Errorf("Marker(b) without a marker = %q, %v; want nil", got, err)
	}
	if got, err := src.Marker(ctx, "c", "_FORMAT"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Marker(c) empty = %q, %v; want empty, not nil", got, err)
	}
	if _, err := src.Marker(ctx, "d", "_FORMAT"); err == nil {
		t.Error("Marker(d) of more than MaxMarkerSize: no error")
	}
	if _, err := src.Marker(ctx, "a", "v1"); !errors.Is(err, source.ErrNotFound) {
		t.Errorf("Marker(a, v1): %v; want ErrNotFound (markers start with _)", err)
	}
}
