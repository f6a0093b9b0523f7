package proc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrExited is returned when the process ended while it was waited for.
var ErrExited = errors.New("proc: process exited")

// Process is a running server. Its methods are not safe for concurrent
// use.
type Process struct {
	Name    string
	Addr    string // host:port it serves on
	Started time.Time
	// TLS, when set, is the client config WaitFor and ActiveAt ask the
	// process with (over https).
	TLS     *tls.Config
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited closes
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("proc: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start runs argv, with stdout and stderr written to logDir/<name>.log.
// addr is where the process will serve.
func Start(name, addr, logDir string, argv ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Should the benchmark die without stopping it, the server dies too
	// rather than keep loading a machine that others share.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Process{Name: name, Addr: addr, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("proc: starting %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("proc: signalling %s: %w", p.Name, err)
	}
	return nil
}

// WaitFor polls url (asking for JSON) every interval until check accepts
// its answer, and returns the time from Start until then. It fails when
// check does, when the process exits, when ctx ends, or after timeout.
func (p *Process) WaitFor(ctx context.Context, url string, interval, timeout time.Duration, check func(status int, body []byte) (bool, error)) (time.Duration, error) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: false, MaxIdleConnsPerHost: 1, TLSClientConfig: p.TLS}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("proc: %w", err)
		}
		// Status pages answer JSON when asked; other URLs ignore it.
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			// Bounded, but above any status page: a cluster of 500 dbs
			// answers some hundreds of KB.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			resp.Body.Close()
			ok, err := check(resp.StatusCode, body)
			if err != nil {
				return 0, fmt.Errorf("proc: %s: %w\nlog:\n%s", p.Name, err, p.LogTail(20))
			}
			if ok {
				return time.Since(p.Started), nil
			}
		}
		select {
		case <-p.exited:
			return 0, fmt.Errorf("%w: %s: %v: %s\nlog:\n%s", ErrExited, p.Name, p.waitErr, p.LogTail(1), p.LogTail(20))
		case <-ctx.Done():
			return 0, fmt.Errorf("proc: waiting for %s: %w", p.Name, ctx.Err())
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("proc: %s not ready at %s after %v\nlog:\n%s", p.Name, url, timeout, p.LogTail(20))
		}
	}
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	// Peak is VmHWM: the most resident memory the process ever had.
	Peak int64
	// Current is VmRSS.
	Current int64
}

// MB is bytes in mebibytes.
func MB(b int64) float64 { return float64(b) / (1 << 20) }

// Memory reads the process's resident memory.
func (p *Process) Memory() (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return Memory{}, fmt.Errorf("proc: %w", err)
	}
	defer f.Close()
	var m Memory
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmHWM":
			dst = &m.Peak
		case "VmRSS":
			dst = &m.Current
		default:
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			return Memory{}, fmt.Errorf("proc: %s: bad %s line %q", p.Name, k, s.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("proc: %s: %w", p.Name, err)
		}
		*dst = kb << 10
	}
	if err := s.Err(); err != nil {
		return Memory{}, fmt.Errorf("proc: %w", err)
	}
	if m.Peak == 0 {
		return Memory{}, fmt.Errorf("proc: %s: no VmHWM in /proc/%d/status", p.Name, p.Pid())
	}
	return m, nil
}

// Stop sends SIGTERM, waits up to 10s, then kills the process.
func (p *Process) Stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("proc: %s did not stop on SIGTERM; killed", p.Name)
	}
}

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Scheme is how the process is asked: https with TLS, else http.
func (p *Process) Scheme() string {
	if p.TLS != nil {
		return "https"
	}
	return "http"
}
