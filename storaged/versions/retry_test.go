package versions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/proxytest"
	"spangle/shared/s3test"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
	"spangle/storaged/loader"
	"spangle/storaged/retry"
)

// loadErr loads db/version of src into a fresh directory and returns the
// loader's error.
func loadErr(t *testing.T, src source.Source, db, version string, dir func(int) string) error {
	t.Helper()
	ctx := context.Background()
	files, err := src.Files(ctx, db, version)
	if err != nil {
		return err
	}
	if dir == nil {
		base := t.TempDir()
		dir = func(p int) string { return filepath.Join(base, fmt.Sprint(p)) }
	}
	_, err = loader.Load(ctx, loader.Request{Source: src, DB: db, Version: version, Files: files, Dir: dir}, loader.Options{})
	if err == nil {
		t.Fatalf("loading %s/%s worked; the test needs it to fail", db, version)
	}
	return err
}

// TestTransient: the errors made by the source, the loader and the data
// are classified where they are made: bad data is final, an unreachable
// source, an object changed mid-read or a failing local disk are not.
func TestTransient(t *testing.T) {
	root := t.TempDir()
	corruptV(t, root, "db", "corrupt")
	writeV(t, root, "db", "good")
	writeV(t, root, "db", "symlink")
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Remove(filepath.Join(root, "db", "symlink", "part-00001"))
	if err := os.Symlink(outside, filepath.Join(root, "db", "symlink", "part-00001")); err != nil {
		t.Fatal(err)
	}
	local, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// An S3 endpoint nobody listens on: the server is down.
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	down, err := source.Open("s3://bkt/root", source.Options{S3: source.S3Options{Endpoint: "http://127.0.0.1:1", Retries: 1, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, s3Err := down.Open(context.Background(), "db", "v1", "part-00000")
	// A partition directory under a regular file cannot be created.
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	_, symErr := local.Files(context.Background(), "db", "symlink")

	for _, c := range []struct {
		what      string
		err       error
		transient bool
	}{
		{"corrupt SequenceFile", loadErr(t, local, "db", "corrupt", nil), false},
		{"symlink leaving the root", symErr, false},
		{"no data files", fmt.Errorf("versions: %w", loader.ErrNoFiles), false},
		{"unsupported codec", fmt.Errorf("loader: %w", fmt.Errorf("seqfile: codec %q: %w", "x", seqfile.ErrUnsupported)), false},
		{"cancelled", context.Canceled, false},
		{"S3 down", s3Err, true},
		{"object changed mid-read", fmt.Errorf("loader: %w", fmt.Errorf("%w: s3://b/k", source.ErrChanged)), true},
		{"local disk", loadErr(t, local, "db", "good", func(p int) string { return filepath.Join(blocker, fmt.Sprint(p)) }), true},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error", c.what)
		}
		if got := retry.Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.what, c.err, got, c.transient)
		}
	}
	if !errors.Is(s3Err, source.ErrUnavailable) {
		t.Errorf("S3 down: %v is not source.ErrUnavailable", s3Err)
	}
}

// s3Harness runs a manager on a versitygw bucket reached through a proxy
// the test can take down, with version v1 of db loaded.
func s3Harness(t *testing.T, mod func(*Options)) (*harness, *proxytest.Proxy, string) {
	t.Helper()
	srv := s3test.Start(t)
	proxy := srv.Proxy(t)
	for _, kv := range srv.ClientEnv() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := filepath.Join(srv.Bucket("bkt"), "root")
	writeBig(t, dir, "v1")
	src, err := source.Open("s3://bkt/root", source.Options{S3: source.S3Options{
		Endpoint: s3test.ProxyEndpoint(proxy), Retries: 2, Backoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, t.TempDir(), t.TempDir(), func(o *Options) {
		o.Source = src
		// One file at a time: the second file's GET comes well after the
		// proxy went down, whatever of the first the socket buffers held.
		o.Loader.Parallel, o.MaxParallelLoads = 1, 1
		if mod != nil {
			mod(o)
		}
	})
	h.waitState("db", "v1", wire.StateActive)
	return h, proxy, dir
}

// writeBig writes a version of 2 files of about 1 MB each, so that the
// proxy can go down in the middle of its load.
func writeBig(t *testing.T, dir, version string) {
	testutil.WriteVersion(t, dir, "db", version, 2, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(30000, version))
}

// failV2 writes v2 and takes the proxy down 200 kB into its load (in its
// first file); v2 fails with a transient error while v1 keeps serving.
func failV2(t *testing.T, h *harness, proxy *proxytest.Proxy, dir string) {
	t.Helper()
	proxy.AfterBytes(200<<10, proxy.Cut)
	writeBig(t, dir, "v2")
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateError)
	if r := h.m.Views().Health()["db"]["v2"].Reason; !strings.Contains(r, "transient") || !strings.Contains(r, "retry") {
		t.Fatalf("v2's reason %q does not say it will be retried", r)
	}
	if val, name, err := h.get("db", "", "key-000004"); err != nil || name != "v1" || val != "value-4-v1" {
		t.Fatalf("while v2 failed: %q from %s, %v; want v1's value", val, name, err)
	}
}

// TestTransientFailureRetried: S3 goes away in the middle of a new
// version's load. The version fails, the old one serves, and once S3 is
// back the new version loads by itself (backoff scans, no Refresh), its
// files untouched.
func TestTransientFailureRetried(t *testing.T) {
	h, proxy, dir := s3Harness(t, func(o *Options) { o.RetryMin, o.RetryMax = 20*time.Millisecond, 200*time.Millisecond })
	failV2(t, h, proxy, dir)
	time.Sleep(300 * time.Millisecond) // a few retries fail while S3 is down
	if _, _, failed := h.m.Views().Counts(); failed < 1 {
		t.Fatalf("failed loads: %d", failed)
	}
	proxy.Heal()
	h.waitState("db", "v2", wire.StateActive)
	if val, name, err := h.get("db", "", "key-000004"); err != nil || name != "v2" || val != "value-4-v2" {
		t.Fatalf("after S3 came back: %q from %s, %v; want v2's value", val, name, err)
	}
	if n := value(h.m.metrics.retries); n < 1 {
		t.Fatalf("spangle_storaged_version_load_retries_total = %v, want at least 1", n)
	}
}

// TestRefreshRetriesAtOnce: a Refresh (SIGHUP) loads a version failed by a
// transient error at once, whatever its backoff; a version failed by its
// data is not tried again.
func TestRefreshRetriesAtOnce(t *testing.T) {
	h, proxy, dir := s3Harness(t, func(o *Options) { o.RetryMin = time.Hour })
	corruptV(t, dir, "bad", "v1")
	h.m.Refresh()
	h.waitState("bad", "v1", wire.StateError)
	if r := h.m.Views().Health()["bad"]["v1"].Reason; strings.Contains(r, "retry") {
		t.Fatalf("a corrupt version's reason %q says it will be retried", r)
	}
	failV2(t, h, proxy, dir)
	// A Refresh queued behind a scan still running (the one for "bad")
	// retries v2 at once, as Refresh does: let it run, and fail, while S3
	// is still cut off, so that the checks below see v2 in its backoff.
	time.Sleep(500 * time.Millisecond)
	proxy.Heal()
	// An hour of backoff: only a Refresh brings v2 back.
	h.m.Scan(context.Background())
	if s := h.state("db", "v2"); s != wire.StateError {
		t.Fatalf("v2 is %s after a scan within its backoff, want ERROR", s)
	}
	_, _, failed := h.m.Views().Counts()
	h.m.Refresh()
	h.waitState("db", "v2", wire.StateActive)
	h.m.Scan(context.Background()) // Refresh's scan is over: v2 is active
	if _, _, f := h.m.Views().Counts(); f != failed || h.state("bad", "v1") != wire.StateError {
		t.Fatalf("the Refresh tried the corrupt version again: failed loads %d, were %d; bad/v1 %s", f, failed, h.state("bad", "v1"))
	}
}
