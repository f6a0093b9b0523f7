package clienttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/client"
	"spangle/shared/nodetest"
	"spangle/shared/proctest"
	"spangle/shared/versiontest"
)

// The binaries TestMain builds, and a storaged it runs for the examples.
var (
	storagedBin, routerdBin string
	exampleBase             string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for pkg, bin := range map[string]*string{"spangle/storaged": &storagedBin, "spangle/routerd": &routerdBin} {
		if *bin, err = proctest.Build(dir, pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	stop, err := startServerForExamples(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client: example server:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startServerForExamples runs a storaged serving db "users" for the
// examples, which have no testing.T to start one with.
func startServerForExamples(dir string) (func(), error) {
	root := filepath.Join(dir, "example-src")
	if err := writeVersion(root, "users", "v1", 2, map[string]string{"alice": "admin", "bob": "reader"}); err != nil {
		return nil, err
	}
	l, err := proctest.PickAddr()
	if err != nil {
		return nil, err
	}
	sup := proctest.NewSupervisor(proctest.Spec{Path: storagedBin, Log: filepath.Join(dir, "example-storaged.log"),
		Args: []string{"--source", root, "--local-store", filepath.Join(dir, "example-store"), "--bind", l, "--log-level", "warn"}})
	if err := sup.Start(); err != nil {
		return nil, err
	}
	if err := proctest.PollHealthy(context.Background(), l, 30*time.Second); err != nil {
		sup.Kill()
		return nil, fmt.Errorf("%w\n%s", err, sup.LogTail(20))
	}
	exampleBase = "http://" + l
	return sup.Kill, nil
}

// writeVersion writes recs as <root>/<db>/<version>, pre-sharded over
// parts files, with _SUCCESS.
func writeVersion(root, db, version string, parts int, recs map[string]string) error {
	var vr []versiontest.Record
	for k, v := range recs {
		vr = append(vr, versiontest.Record{Key: []byte(k), Value: []byte(v)})
	}
	_, err := versiontest.Write(root, db, version, versiontest.Options{Files: parts, InPlace: true}, vr)
	return err
}

// testRecords: odd keys, an empty and a 100 KB value, and plain keys.
func testRecords() map[string]string {
	recs := map[string]string{
		"/": "slash", "a/b/c": "slashes", "%": "percent", "100%25": "escaped-looking", "..": "dotdot",
		"\x00\xff\xfe": "\x00non-utf8\xff", "sp ace\r\n": "crlf", "empty": "", "big": strings.Repeat("0123456789", 10<<10),
	}
	for i := 0; i < 200; i++ {
		recs["key-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
	}
	return recs
}

// startStoraged runs storaged on root and waits until it is healthy.
func startStoraged(t *testing.T, root string, extra ...string) string {
	t.Helper()
	addr := proctest.FreeAddr(t)
	proctest.Start(t, storagedBin, append([]string{"--source", root, "--local-store", t.TempDir(), "--bind", addr}, extra...)...)
	proctest.WaitHealthy(t, addr, 30*time.Second)
	return "http://" + addr
}

// startRouterd runs routerd in front of the storaged nodes and waits
// until it answers a key of db.
func startRouterd(t *testing.T, db, key string, nodes ...string) string {
	t.Helper()
	addr := proctest.FreeAddr(t)
	proctest.Start(t, routerdBin, "--bind", addr, "--storaged", strings.Join(nodes, ","), "--storaged-poll", "100ms",
		"--proxy-timeout", "5s", "--proxy-stage-timeout", "1s")
	n := nodetest.New(addr)
	nodetest.WaitFor(t, 30*time.Second, "routerd serving "+db, func() bool {
		a, err := n.Get(context.Background(), db, key)
		return err == nil && a.Code == 200
	})
	return n.Base
}

func newClient(t *testing.T, base string, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.New(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestGetAndMultiGet: through routerd and on storaged alone, every odd
// key round-trips through Get and MultiGet; not found is no error;
// pinning works and a version nobody holds is client.ErrGone; an unknown db is
// ErrNoDB.
func TestGetAndMultiGet(t *testing.T) {
	root := t.TempDir()
	recs := testRecords()
	if err := writeVersion(root, "db", "v1", 4, recs); err != nil {
		t.Fatal(err)
	}
	st1, st2 := startStoraged(t, root), startStoraged(t, root)
	rd := startRouterd(t, "db", "key-1", st1, st2)
	ctx := context.Background()
	for _, base := range []string{rd, st1} {
		// Three keys a request: MultiGet splits the batch and pins the
		// later requests to the first one's version.
		c := newClient(t, base, client.Options{BatchSize: 3})
		var keys [][]byte
		for k, v := range recs {
			keys = append(keys, []byte(k))
			got, err := c.Get(ctx, "db", []byte(k))
			if err != nil || !got.Found || string(got.Value) != v || got.Version != "v1" {
				t.Fatalf("%s: Get %q: %v found=%v %d bytes version %q", base, k, err, got.Found, len(got.Value), got.Version)
			}
		}
		got, err := c.Get(ctx, "db", []byte("nope"))
		if err != nil || got.Found || got.Version != "v1" {
			t.Fatalf("%s: missing key: %+v %v", base, got, err)
		}
		keys = append(keys, []byte("nope"), []byte("key-1"))
		b, err := c.MultiGet(ctx, "db", keys, client.Pin("v1"))
		if err != nil {
			t.Fatalf("%s: MultiGet: %v", base, err)
		}
		if b.Version != "v1" || len(b.Found) != len(recs) || len(b.Failed) != 0 || len(b.Missing) != 1 || string(b.Missing[0]) != "nope" {
			t.Fatalf("%s: batch version %q, %d found, missing %q, failed %v", base, b.Version, len(b.Found), b.Missing, b.Failed)
		}
		for k, v := range recs {
			if string(b.Found[k]) != v {
				t.Fatalf("%s: MultiGet %q: %d bytes, want %d", base, k, len(b.Found[k]), len(v))
			}
		}
		if _, err := c.Get(ctx, "db", []byte("key-1"), client.Pin("v0")); !errors.Is(err, client.ErrGone) {
			t.Fatalf("%s: pinned to a version nobody holds: %v", base, err)
		}
		if _, err := c.MultiGet(ctx, "db", keys[:2], client.Pin("v0")); !errors.Is(err, client.ErrGone) {
			t.Fatalf("%s: batch pinned to a version nobody holds: %v", base, err)
		}
		var se *client.StatusError
		if _, err := c.Get(ctx, "nodb", []byte("k")); !errors.Is(err, client.ErrNoDB) || !errors.As(err, &se) || se.Status != 404 {
			t.Fatalf("%s: unknown db: %v", base, err)
		}
		if _, err := c.MultiGet(ctx, "db", [][]byte{{}}); !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("%s: empty key: %v", base, err)
		}
	}
}

// TestRetryOn503: a storaged that sheds above one lookup at once answers
// 503 with Retry-After: 1 while another lookup holds it; the client
// waits and succeeds, or with no retries allowed, or a deadline sooner
// than Retry-After, says ErrOverloaded at once.
func TestRetryOn503(t *testing.T) {
	root := t.TempDir()
	if err := writeVersion(root, "db", "v1", 2, testRecords()); err != nil {
		t.Fatal(err)
	}
	st := startStoraged(t, root, "--max-inflight", "1", "--test-delay", "1s")
	ctx := context.Background()
	// hold keeps storaged's one slot busy for about a second: it waits
	// until the slot is free, starts a lookup and returns once storaged
	// counts it in progress.
	hold := func() {
		t.Helper()
		waitInflight(t, st, 0)
		go func() {
			resp, err := http.Get(st + "/db/key-0")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		waitInflight(t, st, 1)
	}
	shedBefore := shed(t, st)

	hold()
	c := newClient(t, st, client.Options{MaxRetries: 3})
	v, err := c.Get(ctx, "db", []byte("key-7"))
	if err != nil || string(v.Value) != "value-7" {
		t.Fatalf("Get with retries: %v %+v", err, v)
	}
	hold()
	b, err := c.MultiGet(ctx, "db", [][]byte{[]byte("key-8"), []byte("key-9")})
	if err != nil || string(b.Found["key-9"]) != "value-9" {
		t.Fatalf("MultiGet with retries: %v %+v", err, b)
	}
	if n := shed(t, st); n < shedBefore+2 {
		t.Fatalf("storaged shed %v times: the retries were not exercised", n-shedBefore)
	}

	hold()
	none := newClient(t, st, client.Options{MaxRetries: -1})
	var se *client.StatusError
	if _, err := none.Get(ctx, "db", []byte("key-7")); !errors.Is(err, client.ErrOverloaded) || !errors.As(err, &se) || se.RetryAfter != time.Second {
		t.Fatalf("no retries: %v", err)
	}
	hold()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := c.Get(short, "db", []byte("key-7")); !errors.Is(err, client.ErrOverloaded) {
		t.Fatalf("deadline sooner than Retry-After: %v, want the 503 at once", err)
	}
}

// shed reads storaged's count of 503 answers.
func shed(t *testing.T, base string) float64 {
	t.Helper()
	return metric(t, base, `spangle_storaged_requests_total{code="503"}`)
}

// waitInflight waits until storaged has n lookups in progress.
func waitInflight(t *testing.T, base string, n float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for metric(t, base, "spangle_storaged_inflight_requests") != n {
		if time.Now().After(deadline) {
			t.Fatalf("storaged never had %v lookups in progress", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metric reads one sample (name with its labels as written) of base's
// /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	v, _, err := nodetest.New(base).Metric(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCancelledContext: a call to a slow server returns the context's
// error when it is cancelled or its deadline passes, through routerd and
// on storaged.
func TestCancelledContext(t *testing.T) {
	root := t.TempDir()
	if err := writeVersion(root, "db", "v1", 2, testRecords()); err != nil {
		t.Fatal(err)
	}
	st := startStoraged(t, root, "--test-delay", "30s")
	c := newClient(t, st, client.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.Get(ctx, "db", []byte("key-1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.MultiGet(ctx, "db", [][]byte{[]byte("key-1")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("MultiGet past its deadline: %v", err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.Get(done, "db", []byte("key-1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
}

func TestNewRefusesBadBase(t *testing.T) {
	for _, base := range []string{"", "host:1", "ftp://h:1", "http://h:1/path"} {
		if _, err := client.New(base, client.Options{}); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
}

// TestConnectionReuse: calls after the first reuse the kept-alive
// connection, whatever their answer (a value, not found, a batch).
func TestConnectionReuse(t *testing.T) {
	root := t.TempDir()
	if err := writeVersion(root, "db", "v1", 2, testRecords()); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, startStoraged(t, root), client.Options{})
	var fresh, reused int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused++
			} else {
				fresh++
			}
		},
	})
	for i := 0; i < 10; i++ {
		if _, err := c.Get(ctx, "db", []byte("key-"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(ctx, "db", []byte("nope")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.MultiGet(ctx, "db", [][]byte{[]byte("key-1"), []byte("big")}); err != nil {
			t.Fatal(err)
		}
	}
	if fresh != 1 || reused != 29 {
		t.Fatalf("%d new connections, %d reused; want 1 and 29", fresh, reused)
	}
}
