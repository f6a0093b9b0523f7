package transfer

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/dbver"
	"spangle/shared/partitioner"
	"spangle/shared/sparkey"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/loader"
	"spangle/storaged/table"
)

func TestCopyPartition(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"000002.ldb": "table bytes", "CURRENT": "MANIFEST-000001\n", "MANIFEST-000001": "edit"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, skip := range []string{"LOCK", "LOG"} {
		os.WriteFile(filepath.Join(src, skip), []byte("x"), 0o644)
	}
	srv := httptest.NewServer(Handler(func(p dbver.Partition) (string, bool) {
		return src, p == dbver.Of("db", "v1").Partition(3)
	}))
	defer srv.Close()
	peer := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	dst := filepath.Join(t.TempDir(), "p-3")
	if err := Fetch(ctx, srv.Client(), "http", peer, dbver.Of("db", "v1").Partition(3), dst); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != len(files) {
		t.Fatalf("copied %d files, want %d (LOCK and LOG left out)", len(entries), len(files))
	}
	for name, body := range files {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != body {
			t.Errorf("%s = %q, %v", name, got, err)
		}
	}
	if err := Fetch(ctx, srv.Client(), "http", peer, dbver.Of("db", "v1").Partition(4), t.TempDir()); !errors.Is(err, ErrNotHeld) {
		t.Errorf("a partition the peer lacks: %v, want ErrNotHeld", err)
	}
	if code := get(t, srv.URL+Prefix+"db/v1/x"); code != http.StatusBadRequest {
		t.Errorf("bad partition: %d", code)
	}
}

func get(t *testing.T, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A peer that sends an entry outside the partition directory is refused.
func TestFetchRefusesPaths(t *testing.T) {
	for _, name := range []string{"../escape", "sub/file", "/abs"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			tw.Write([]byte("x"))
			tw.Close()
			w.Write(buf.Bytes())
		}))
		dir := filepath.Join(t.TempDir(), "p")
		err := Fetch(context.Background(), srv.Client(), "http", strings.TrimPrefix(srv.URL, "http://"), dbver.Of("db", "v1").Partition(0), dir)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("entry %q: Fetch = %v, want a refusal", name, err)
		}
	}
}

// TestCopySparkeyPartition copies a partition that serves a Sparkey pair
// in place (a log, its index and its sum file beside an empty LevelDB
// database): the copy verifies and serves every key, deleted ones not.
func TestCopySparkeyPartition(t *testing.T) {
	root := t.TempDir()
	recs := testutil.Records(600, "v1")
	testutil.WriteSparkeyVersion(t, root, "db", "v1", 2, sparkey.WriterOptions{}, recs)
	src, files := testutil.OpenVersion(t, root, "db", "v1")
	dirOf := func(p int) string { return filepath.Join(root, "store", fmt.Sprint(p)) }
	res, err := loader.Load(t.Context(), loader.Request{Source: src, DB: "db", Version: "v1", Files: files, Dir: dirOf},
		loader.Options{Build: table.BuildOptions{NoSync: true}})
	if err != nil || res.InPlace != 2 {
		t.Fatalf("load: %+v, %v; want both pairs in place", res, err)
	}
	srv := httptest.NewServer(Handler(func(p dbver.Partition) (string, bool) { return dirOf(p.P), p.P < 2 }))
	defer srv.Close()
	peer := strings.TrimPrefix(srv.URL, "http://")
	for p := 0; p < 2; p++ {
		dst := filepath.Join(t.TempDir(), "copy")
		if err := Fetch(t.Context(), srv.Client(), "http", peer, dbver.Of("db", "v1").Partition(p), dst); err != nil {
			t.Fatal(err)
		}
		if err := table.VerifyPartition(t.Context(), dst, nil); err != nil {
			t.Fatal(err)
		}
		part, err := table.OpenPartition(dst, table.CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if partitioner.Partition(r.Key, 2) != p {
				continue
			}
			n++
			if v, err := part.Get(nil, r.Key); err != nil || !bytes.Equal(v, r.Value) {
				t.Fatalf("partition %d: %q = %q, %v", p, r.Key, v, err)
			}
		}
		part.Close()
		if n == 0 {
			t.Fatalf("partition %d holds no key", p)
		}
	}
}
