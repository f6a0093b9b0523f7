package proctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"spangle/shared/wait"
)

// ErrExited is returned by WaitReady when the process ended while it was
// waited for.
var ErrExited = errors.New("proctest: process exited")

// Spec says how to run a process.
type Spec struct {
	// Path is the program; Args its arguments.
	Path string
	Args []string
	// Dir is its working directory; default the test's.
	Dir string
	// Env is its whole environment; nil inherits the test's.
	Env []string
	// Log is the file its output is appended to, a line marking each
	// start.
	Log string
}

// Supervisor runs the process of a Spec, once or again and again in
// turn (a restart keeps the log), and reaps it. It needs no test, so
// benchmarks and TestMain use it too; Process is its face for a test.
// It is safe for concurrent use.
type Supervisor struct {
	spec Spec

	mu      sync.Mutex
	cmd     *exec.Cmd     // guarded by mu; nil while not running
	exited  chan struct{} // guarded by mu; closed when cmd has exited
	waitErr error         // guarded by mu; how cmd ended, once exited is closed
	started time.Time     // guarded by mu; when cmd started
}

// NewSupervisor returns a supervisor of spec's process, not started.
func NewSupervisor(spec Spec) *Supervisor { return &Supervisor{spec: spec} }

// name is how errors name the process.
func (s *Supervisor) name() string { return filepath.Base(s.spec.Path) }

// Start starts the process; it must not be running. The process dies
// with the test binary (on Linux), so none outlives a killed run.
func (s *Supervisor) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("proctest: %s is still running", s.name())
	}
	logf, err := os.OpenFile(s.spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("proctest: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== proctest: starting %s at %s\n", s.name(), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.spec.Path, s.spec.Args...)
	cmd.Dir, cmd.Env = s.spec.Dir, s.spec.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("proctest: starting %s: %w", s.name(), err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()
	s.cmd, s.exited, s.started = cmd, exited, time.Now()
	return nil
}

// running returns the process started last and its exit channel, or nil.
func (s *Supervisor) running() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.exited
}

// forget marks cmd as no longer running, unless another start replaced it.
func (s *Supervisor) forget(cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == cmd {
		s.cmd = nil
	}
}

// Started is when the process last started.
func (s *Supervisor) Started() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// PID is the running process's id (0 when it is not running), to show
// that a process was not restarted or to read its /proc entries.
func (s *Supervisor) PID() int {
	cmd, _ := s.running()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Running reports whether the process started last is still alive.
func (s *Supervisor) Running() bool {
	cmd, exited := s.running()
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
func (s *Supervisor) Signal(sig os.Signal) {
	if cmd, _ := s.running(); cmd != nil {
		cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL, as a crash would (no goodbye, no deregistration),
// and reaps the process. Killing a stopped process does nothing.
func (s *Supervisor) Kill() {
	if cmd, exited := s.running(); cmd != nil {
		cmd.Process.Kill()
		<-exited
		s.forget(cmd)
	}
}

// Stop sends SIGTERM and waits for a graceful exit, killing the process
// after timeout; it returns an error only when it had to kill.
func (s *Supervisor) Stop(timeout time.Duration) error {
	cmd, exited := s.running()
	if cmd == nil {
		return nil
	}
	defer s.forget(cmd)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("proctest: %s did not stop on SIGTERM within %v; killed", s.name(), timeout)
	}
}

// WaitReady polls ready every interval (wait.Poll) until it reports
// done. It fails when ready is done with an error, when the process
// exits (ErrExited), when ctx ends or after timeout; each error ends
// with the log's last lines.
func (s *Supervisor) WaitReady(ctx context.Context, timeout, interval time.Duration, ready func(ctx context.Context) (bool, error)) error {
	_, exited := s.running()
	if exited == nil {
		return fmt.Errorf("%w: %s was not started", ErrExited, s.name())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gone := false
	err := wait.Poll(ctx, interval, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			gone = true
			return true, ErrExited
		default:
		}
		return ready(ctx)
	})
	switch {
	case err == nil:
		return nil
	case gone:
		s.mu.Lock()
		werr := s.waitErr
		s.mu.Unlock()
		return fmt.Errorf("%w: %s (%v) before it was ready; log %s:\n%s", ErrExited, s.name(), werr, s.spec.Log, s.LogTail(40))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("proctest: %s not ready after %v: %w; log %s:\n%s", s.name(), timeout, err, s.spec.Log, s.LogTail(40))
	}
	return fmt.Errorf("proctest: %s: %w; log %s:\n%s", s.name(), err, s.spec.Log, s.LogTail(40))
}

// LogTail returns the last n lines of everything the process wrote.
func (s *Supervisor) LogTail(n int) string {
	b, err := os.ReadFile(s.spec.Log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PickAddr returns a loopback host:port nobody listened on a moment ago.
func PickAddr() (string, error) {
	port, err := freePort()
	return "127.0.0.1:" + strconv.Itoa(port), err
}

// handedOut remembers the ports freePort gave this process lately. The
// kernel may give a port closed a moment ago to the next listen on :0,
// and two daemons of one test then got the same --bind (seen in
// storaged/integration TestSessionExpiry). It is process-wide state on
// purpose: every caller in the test binary picks from the one kernel.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
	order []int
}{ports: map[int]bool{}}

// rememberPorts is how many recent ports freePort will not hand out again.
const rememberPorts = 512

func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for attempt := 0; attempt < 20; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("proctest: finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		handedOut.order = append(handedOut.order, port)
		if len(handedOut.order) > rememberPorts {
			delete(handedOut.ports, handedOut.order[0])
			handedOut.order = handedOut.order[1:]
		}
		return port, nil
	}
	return 0, errors.New("proctest: finding a free port: the kernel gave only ports handed out lately")
}

// OnFreePort calls start with a free loopback port until it succeeds, at
// most three times: another process may take the port before the server
// binds it. It returns the port start succeeded on.
func OnFreePort(start func(port int) error) (int, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var port int
		if port, err = freePort(); err != nil {
			return 0, err
		}
		if err = start(port); err == nil {
			return port, nil
		}
	}
	return 0, err
}

// SetArgs replaces the arguments of the next start, for a server whose
// port is known only when it starts.
func (s *Supervisor) SetArgs(args ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spec.Args = args
}

// HTTPReady is a readiness check for WaitReady (or wait.Poll): a GET of
// url through client answers, with a status accept takes. Until it
// answers, the check is not done and the error says why.
func HTTPReady(client *http.Client, url string, accept func(status int) bool) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return true, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return accept(resp.StatusCode), nil
	}
}
