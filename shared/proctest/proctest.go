package proctest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Process is one daemon process of a test. It is safe for concurrent
// use, so a test may kill it from a timer while readers run; Start,
// Restart and the t.Fatal paths belong to the test's goroutine.
type Process struct {
	t       testing.TB
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd     // guarded by mu; nil while not running
	exited chan struct{} // guarded by mu; closed when cmd has exited
}

// running returns the process started last and its exit channel, or nil.
func (p *Process) running() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// forget marks cmd as no longer running, unless another start replaced it.
func (p *Process) forget(cmd *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == cmd {
		p.cmd = nil
	}
}

// Start runs bin with args, its output appended to a log file in a
// temporary directory, and does not wait for anything. When the test
// ends the process is stopped, and its log's tail is shown if the test
// failed.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, bin: bin, args: args, logPath: filepath.Join(t.TempDir(), filepath.Base(bin)+".log")}
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
	if cmd, _ := p.running(); cmd != nil {
		p.t.Fatalf("proctest: %s is still running", p.bin)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("proctest: %v", err)
	}
	defer f.Close()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("proctest: starting %s: %v", p.bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
}

// PID is the running process's id (0 when it is not running), to show
// that a process was not restarted or to read its /proc entries.
func (p *Process) PID() int {
	cmd, _ := p.running()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Running reports whether the process started last is still alive.
func (p *Process) Running() bool {
	cmd, exited := p.running()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Signal sends sig to the running process; it does nothing otherwise.
func (p *Process) Signal(sig os.Signal) {
	if cmd, _ := p.running(); cmd != nil {
		cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL, as a crash would: no goodbye, no deregistration.
func (p *Process) Kill() {
	if cmd, exited := p.running(); cmd != nil {
		cmd.Process.Kill()
		<-exited
		p.forget(cmd)
	}
}

// Stop sends SIGTERM and waits for a graceful exit, killing the process
// after StopTimeout.
func (p *Process) Stop() {
	cmd, exited := p.running()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(StopTimeout):
		cmd.Process.Kill()
		<-exited
	}
	p.forget(cmd)
}

// LogTail returns the last n lines of everything the process wrote.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitHealthy polls http://addr/healthz until it answers 200 and fails the
// test after d.
func WaitHealthy(t testing.TB, addr string, d time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("proctest: %s not healthy after %v", addr, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
