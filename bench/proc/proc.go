package proc

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"spangle/shared/proctest"
)

// ErrExited is returned when the process ended while it was waited for.
var ErrExited = proctest.ErrExited

// Process is a running server: a proctest.Supervisor with the name and
// address the benchmark knows it by. Its methods are not safe for
// concurrent use.
type Process struct {
	Name    string
	Addr    string // host:port it serves on
	Started time.Time
	// TLS, when set, is the client config WaitFor and ActiveAt ask the
	// process with (over https).
	TLS *tls.Config
	sup *proctest.Supervisor
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) { return proctest.PickAddr() }

// Start runs argv, with stdout and stderr written to logDir/<name>.log.
// addr is where the process will serve. Should the benchmark die without
// stopping it, the server dies too rather than keep loading a machine
// that others share.
func Start(name, addr, logDir string, argv ...string) (*Process, error) {
	sup := proctest.NewSupervisor(proctest.Spec{Path: argv[0], Args: argv[1:], Log: filepath.Join(logDir, name+".log")})
	if err := sup.Start(); err != nil {
		return nil, fmt.Errorf("proc: %s: %w", name, err)
	}
	return &Process{Name: name, Addr: addr, Started: sup.Started(), sup: sup}, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.sup.PID() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if !p.sup.Running() {
		return fmt.Errorf("proc: signalling %s: not running", p.Name)
	}
	p.sup.Signal(sig)
	return nil
}

// WaitFor polls url (asking for JSON) every interval until check accepts
// its answer, and returns the time from Start until then. It fails when
// check does, when the process exits, when ctx ends, or after timeout.
func (p *Process) WaitFor(ctx context.Context, url string, interval, timeout time.Duration, check func(status int, body []byte) (bool, error)) (time.Duration, error) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, TLSClientConfig: p.TLS}}
	defer client.CloseIdleConnections()
	err := p.sup.WaitReady(ctx, timeout, interval, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return true, err
		}
		// Status pages answer JSON when asked; other URLs ignore it.
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		// Bounded, but above any status page: a cluster of 500 dbs
		// answers some hundreds of KB.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		ok, err := check(resp.StatusCode, body)
		return ok || err != nil, err
	})
	if err != nil {
		return 0, fmt.Errorf("proc: %s at %s: %w", p.Name, url, err)
	}
	return time.Since(p.Started), nil
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	// Peak is VmHWM: the most resident memory the process ever had.
	Peak int64
	// Current is VmRSS.
	Current int64
	// Anon is RssAnon: the part of Current that is the process's own
	// memory, as against file pages it has mapped (which are the page
	// cache's and which the kernel reclaims under pressure).
	Anon int64
	// File is RssFile: the file pages the process has mapped.
	File int64
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
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
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

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux build the bench runs on.
const clockTicks = 100

// CPUSeconds reads the CPU time the process has used so far, user and
// system, from /proc/<pid>/stat (10 ms resolution).
func (p *Process) CPUSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("proc: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing one, starting at the state (field 3).
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("proc: %s: bad /proc/%d/stat %q", p.Name, p.Pid(), b)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc: %s: /proc/%d/stat: %w", p.Name, p.Pid(), err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// Stop sends SIGTERM, waits up to 10s, then kills the process.
func (p *Process) Stop() error { return p.sup.Stop(10 * time.Second) }

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return p.sup.LogTail(n) }

// Scheme is how the process is asked: https with TLS, else http.
func (p *Process) Scheme() string {
	if p.TLS != nil {
		return "https"
	}
	return "http"
}
