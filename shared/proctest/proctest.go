package proctest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"spangle/shared/wait"
	"strings"
	"testing"
	"time"
)

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 15 * time.Second

// logTail is how many lines of a process's log a failing test shows.
const logTail = 60

// Build compiles the main package pkg (e.g. "spangle/storaged") into dir
// and returns the binary's path. It is meant for TestMain, before any
// test runs; the build's own output goes to stderr.
func Build(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("proctest: building %s: %w", pkg, err)
	}
	return bin, nil
}

// RunWithBinary is a TestMain body for tests that run a daemon's
// processes: it builds pkg into a temporary directory, sets *bin to the
// binary, runs the tests and removes the directory. It returns the exit
// code for os.Exit; a failed build fails the whole package with the
// reason on stderr.
func RunWithBinary(m *testing.M, pkg string, bin *string) int {
	dir, err := os.MkdirTemp("", "proctest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "proctest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = Build(dir, pkg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// FreeAddr returns a loopback host:port nobody listened on a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := PickAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Process is one daemon process of a test: a Supervisor that fails the
// test when it cannot start. It is safe for concurrent use, so a test
// may kill it from a timer while readers run; Start, Restart and the
// t.Fatal paths belong to the test's goroutine.
type Process struct {
	*Supervisor
	t testing.TB
}

// Start runs bin with args, its output appended to a log file in a
// temporary directory, and does not wait for anything. When the test
// ends the process is stopped, and its log's tail is shown if the test
// failed.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Supervisor: NewSupervisor(Spec{Path: bin, Args: args, Log: filepath.Join(t.TempDir(), filepath.Base(bin)+".log")}), t: t}
	p.Restart()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s %s log (last %d lines):\n%s", filepath.Base(bin), strings.Join(args, " "), logTail, p.LogTail(logTail))
		}
	})
	return p
}

// Restart starts the process again with the same arguments; it must not
// be running.
func (p *Process) Restart() {
	p.t.Helper()
	if err := p.Supervisor.Start(); err != nil {
		p.t.Fatal(err)
	}
}

// Stop sends SIGTERM and waits for a graceful exit, killing the process
// after StopTimeout.
func (p *Process) Stop() { p.Supervisor.Stop(StopTimeout) }

// WaitHealthy polls http://addr/healthz until it answers 200 and fails the
// test after d.
func WaitHealthy(t testing.TB, addr string, d time.Duration) {
	t.Helper()
	if err := PollHealthy(context.Background(), addr, d); err != nil {
		t.Fatal(err)
	}
}

// PollHealthy polls http://addr/healthz until it answers 200, for code
// without a test; it fails after d.
func PollHealthy(ctx context.Context, addr string, d time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := wait.Poll(ctx, 20*time.Millisecond, HTTPReady(client, "http://"+addr+"/healthz", func(status int) bool { return status == http.StatusOK }))
	if err != nil {
		return fmt.Errorf("proctest: %s not healthy after %v: %w", addr, d, err)
	}
	return nil
}
