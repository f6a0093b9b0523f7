package integration

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"spangle/shared/proxytest"
	"spangle/shared/s3test"
	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// s3Keys makes each of the 8 files about 1 MB, so that a load takes
// many reads and a fault can land in its middle.
const s3Keys = 60000

// s3Bucket and s3Root: the tests' source is s3://spangle/batch.
const (
	s3Bucket = "spangle"
	s3Root   = "s3://" + s3Bucket + "/batch"
)

// s3Setup starts versitygw with a proxy in front of it, writes version
// v1 into the bucket, and points the AWS chain of the storaged processes
// the test starts (they inherit the environment) at the proxy.
func s3Setup(t *testing.T) (*s3test.Server, *proxytest.Proxy, string) {
	t.Helper()
	srv := s3test.Start(t)
	proxy := srv.Proxy(t)
	for _, kv := range srv.ClientEnv() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", s3test.ProxyEndpoint(proxy))
	dir := filepath.Join(srv.Bucket(s3Bucket), "batch")
	writeS3Version(t, dir, "v1")
	return srv, proxy, dir
}

func writeS3Version(t testing.TB, dir, version string) {
	t.Helper()
	testutil.WriteVersion(t, dir, testDB, version, testParts, testutil.Sharded, seqfile.WriterOptions{},
		testutil.Records(s3Keys, version))
}

// startOnS3 runs a standalone storaged on the S3 root.
func startOnS3(t *testing.T, extra ...string) *node {
	t.Helper()
	return startStandalone(t, s3Root, t.TempDir(), append([]string{"--refresh-period", "300ms"}, extra...)...)
}

// readAll reads every 97th key once and returns how many answers were not
// the version's value, and the first of them.
func readAll(n *node) (failed int, first string) {
	for i := 0; i < s3Keys; i += 97 {
		code, body, ver, err := n.get(testDB, keyOf(i))
		if err != nil || code != 200 || body != valueOf(i, ver) {
			failed++
			if first == "" {
				first = keyOf(i) + ": " + body
			}
		}
	}
	return failed, first
}

// reads is a reader of n's keys in the background (readBackground).
type reads struct {
	ok, failed int
	seen       []string // the versions answered, in order, each once
}

// readBackground reads keys in a loop until the function it returns is
// called (or the test ends), which then returns what the reads saw.
func readBackground(t *testing.T, n *node) (finish func() reads) {
	stop := make(chan struct{})
	done := make(chan reads, 1)
	go func() {
		var r reads
		defer func() { done <- r }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < s3Keys; i += 997 {
				code, body, ver, err := n.get(testDB, keyOf(i))
				if err != nil || code != 200 || body != valueOf(i, ver) {
					r.failed++
					continue
				}
				r.ok++
				if len(r.seen) == 0 || r.seen[len(r.seen)-1] != ver {
					r.seen = append(r.seen, ver)
				}
			}
		}
	}()
	var once sync.Once
	finish = func() reads {
		once.Do(func() { close(stop) })
		return <-done
	}
	t.Cleanup(func() { once.Do(func() { close(stop) }) }) // a failed check stops the reader too
	return finish
}

// TestS3UnreachableAtStart: a node restarting while S3 is unreachable
// serves at once the version complete in its local store, shows the
// source error on /healthz and the status page, and once S3 is back its
// refresh picks up a new version.
func TestS3UnreachableAtStart(t *testing.T) {
	_, proxy, dir := s3Setup(t)
	n := startOnS3(t)
	waitActive(t, 2*time.Minute, testDB, "v1", n)
	n.Stop()

	proxy.Cut()
	n.Restart()
	waitActive(t, time.Minute, testDB, "v1", n)
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads failed from the local store with S3 unreachable; first: %s", failed, first)
	}
	waitFor(t, time.Minute, "the source error on /healthz", func() bool {
		h := n.healthz()[wire.HealthSource]
		for root, e := range h {
			return strings.HasPrefix(root, s3Root) && e.State == wire.StateError && strings.Contains(e.Reason, s3Bucket)
		}
		return false
	})
	st, err := n.status()
	if err != nil || st.Source == nil || st.Source.Error == "" {
		t.Fatalf("status page: %+v, %v; want the source error", st.Source, err)
	}

	proxy.Heal()
	writeS3Version(t, dir, "v2")
	waitActive(t, 2*time.Minute, testDB, "v2", n)
	if _, still := n.healthz()[wire.HealthSource]; still {
		t.Error("the source error stays on /healthz after S3 is back")
	}
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads failed on v2; first: %s", failed, first)
	}
}

// TestS3ConnectionsCutDuringLoad: while a new version loads, every
// connection to S3 drops after 256 KiB. The load resumes its downloads
// and the version becomes ACTIVE; reads meanwhile never fail and never
// go back a version.
func TestS3ConnectionsCutDuringLoad(t *testing.T) {
	_, proxy, dir := s3Setup(t)
	n := startOnS3(t)
	waitActive(t, 2*time.Minute, testDB, "v1", n)

	finish := readBackground(t, n)
	proxy.CutAfter(256 << 10)
	writeS3Version(t, dir, "v2")
	waitActive(t, 2*time.Minute, testDB, "v2", n)
	r := finish()
	if r.failed > 0 || r.ok == 0 {
		t.Fatalf("%d reads failed (%d ok) while v2 loaded through cut connections", r.failed, r.ok)
	}
	if strings.Join(r.seen, ",") != "v1,v2" && strings.Join(r.seen, ",") != "v2" {
		t.Fatalf("versions seen in order: %v; want v1 then v2", r.seen)
	}
	if proxy.Cuts() == 0 {
		t.Fatal("the proxy cut no connection; the test proved nothing")
	}
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads of v2 failed; first: %s", failed, first)
	}
}

// TestS3StoppedDuringLoad: S3 is killed 1 MB into a new version's load.
// The new version goes to ERROR with a reason saying it will be retried;
// the old one keeps serving, with no failed read. Once S3 is back on the
// same port, the new version loads by itself, its files untouched: an
// unreachable source is not bad data.
func TestS3StoppedDuringLoad(t *testing.T) {
	srv, proxy, dir := s3Setup(t)
	n := startOnS3(t)
	waitActive(t, 2*time.Minute, testDB, "v1", n)

	finish := readBackground(t, n)
	proxy.AfterBytes(1<<20, srv.Stop) // under half of v2's files: it lands mid-load
	writeS3Version(t, dir, "v2")
	var reason string
	waitFor(t, 2*time.Minute, "v2 in ERROR", func() bool {
		h := n.healthz()[testDB]["v2"]
		reason = h.Reason
		return h.State == wire.StateError
	})
	if !strings.Contains(reason, s3Bucket) || !strings.Contains(reason, "retry") {
		t.Errorf("v2's reason %q does not name the bucket and say it will be retried", reason)
	}
	if got := n.healthz()[testDB]["v1"].State; got != wire.StateActive {
		t.Fatalf("v1 is %s, want ACTIVE", got)
	}
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads of v1 failed after v2's failure; first: %s", failed, first)
	}

	srv.Restart()
	waitActive(t, 2*time.Minute, testDB, "v2", n)
	r := finish()
	if r.failed > 0 || r.ok == 0 {
		t.Fatalf("%d reads failed (%d ok) while S3 died under v2's load and came back", r.failed, r.ok)
	}
	if strings.Join(r.seen, ",") != "v1,v2" {
		t.Fatalf("versions seen in order: %v; want v1 then v2", r.seen)
	}
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads of v2 failed; first: %s", failed, first)
	}
}
