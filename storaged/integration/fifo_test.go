//go:build unix

package integration

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"spangle/shared/proctest"
	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// A FIFO named _PIN in one db's directory used to block every scan in
// open(2) for good: nothing loaded again, SIGHUP did nothing and SIGTERM
// no longer stopped the daemon. A real storaged must go on loading the
// other dbs, show the marker as an error, reload on SIGHUP, and stop on
// SIGTERM.
func TestFIFOMarkerHangsNothing(t *testing.T) {
	root := t.TempDir()
	recs := func(v string) []testutil.Record {
		var out []testutil.Record
		for i := 0; i < 20; i++ {
			out = append(out, testutil.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
		}
		return out
	}
	testutil.WriteVersion(t, root, "stuck", "v1", 2, testutil.RoundRobin, seqfile.WriterOptions{}, recs("s1"))
	testutil.WriteVersion(t, root, "good", "v1", 2, testutil.RoundRobin, seqfile.WriterOptions{}, recs("g1"))
	if err := syscall.Mkfifo(filepath.Join(root, "stuck", "_PIN"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddr(t)
	n := &node{addr: addr, store: t.TempDir()}
	n.Process = proctest.Start(t, storagedBin, "--source", root, "--local-store", n.store, "--bind", addr, "--settle-time", "0s")
	waitActive(t, 30*time.Second, "good", "v1", n)
	waitActive(t, 30*time.Second, "stuck", "v1", n)
	waitFor(t, 10*time.Second, "the FIFO marker shown as an error", func() bool {
		return n.state("stuck", "_PIN") == wire.StateError
	})

	// A new version of the good db loads on SIGHUP: scans go on.
	testutil.WriteVersion(t, root, "good", "v2", 2, testutil.RoundRobin, seqfile.WriterOptions{}, recs("g2"))
	n.refresh()
	waitActive(t, 30*time.Second, "good", "v2", n)
	if code, body, v, err := n.get("good", "k3"); err != nil || code != 200 || body != "g2" || v != "v2" {
		t.Fatalf("good/k3 after SIGHUP: %d %q %q %v", code, body, v, err)
	}

	n.Signal(syscall.SIGTERM)
	waitFor(t, 20*time.Second, "storaged to stop on SIGTERM", func() bool { return !n.Running() })
}
