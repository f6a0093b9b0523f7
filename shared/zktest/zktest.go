package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"spangle/shared/proctest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Where Debian's zookeeper package puts the server. The jar's manifest
// names the other jars it needs; slf4j-simple gives it a logger that
// writes to stderr, which goes to the log file.
const (
	zkJar      = "/usr/share/java/zookeeper.jar"
	loggerJar  = "/usr/share/java/slf4j-simple.jar"
	mainClass  = "org.apache.zookeeper.server.ZooKeeperServerMain"
	installMsg = "zktest: ZooKeeper is needed: install it with `apt-get install zookeeper` (java and " + zkJar + ")"
)

// TickTime is the server's tick. Session timeouts are bounded below by
// twice the tick, so tests may ask for sessions as short as 400ms.
const TickTime = 200 * time.Millisecond

// readyTimeout bounds a start; it is generous because other tests may be
// loading the machine.
const readyTimeout = 60 * time.Second

// Server is one standalone ZooKeeper server process. Its methods are safe
// for concurrent use.
type Server struct {
	t    testing.TB // nil for a server from Run
	dir  string
	port int // set before proc starts
	proc *proctest.Supervisor
	opts Options
	// optsErr is why opts cannot be applied; launch fails with it.
	optsErr error

	mu      sync.Mutex
	started time.Duration // guarded by mu; how long the last start took
}

// Start starts a server on a free loopback port and returns once it
// serves (srvr reports Mode: standalone). It stops at the test's cleanup,
// and prints the end of the server's log if the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// Options change how a server runs. The zero value is Start's server.
type Options struct {
	// Super, "user:password" if set, is the server's superuser
	// (zookeeper.DigestAuthenticationProvider.superDigest): a client
	// that authenticates with it (RawAuth) passes every ACL, so that a
	// test can look at and clean up what a cluster's credential
	// protects, as an operator with the superuser would. Digest
	// authentication itself needs no option: every server has it.
	Super string
}

// StartWith is Start with opts.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	s := newServer(t, t.TempDir(), opts)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			s.printLog()
		}
	})
	if err := s.launch(); err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

// Run starts a server outside a test, for benchmarks that measure a
// cluster as a whole: its data, config and log go in dir, which must
// exist. The caller stops it with Stop. Restart is for servers from
// Start only.
func Run(dir string) (*Server, error) {
	s := newServer(nil, dir, Options{})
	if err := s.launch(); err != nil {
		return nil, err
	}
	return s, nil
}

// newServer returns a server of dir, not started: java running
// ZooKeeper on dir/zoo.cfg.
func newServer(t testing.TB, dir string, opts Options) *Server {
	cp := zkJar
	if _, err := os.Stat(loggerJar); err == nil {
		cp += ":" + loggerJar
	}
	// Flags chosen for a fast start and a small footprint: a test server
	// needs neither the optimizing compiler nor a large heap.
	args := []string{
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms16m", "-Xmx256m",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	}
	var optsErr error
	if opts.Super != "" {
		d, err := superDigest(opts.Super)
		if err != nil {
			optsErr = err
		}
		args = append(args, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+d)
	}
	args = append(args, "-cp", cp, mainClass, filepath.Join(dir, "zoo.cfg"))
	return &Server{t: t, dir: dir, opts: opts, optsErr: optsErr,
		proc: proctest.NewSupervisor(proctest.Spec{Path: "java", Args: args, Dir: dir, Log: filepath.Join(dir, "zookeeper.log")})}
}

// launch checks that ZooKeeper is installed and starts it on a free port.
func (s *Server) launch() error {
	if s.optsErr != nil {
		return s.optsErr
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("%s: java not found: %w", installMsg, err)
	}
	if _, err := os.Stat(zkJar); err != nil {
		return fmt.Errorf("%s: %w", installMsg, err)
	}
	_, err := proctest.OnFreePort(func(port int) error {
		s.port = port
		if err := s.start(); err != nil {
			s.Stop()
			return err
		}
		return nil
	})
	return err
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Dir is the directory holding the server's data, config and log.
func (s *Server) Dir() string { return s.dir }

// StartDuration is how long the last start took, from exec to ready.
func (s *Server) StartDuration() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit. Clients see their connection drop. Stopping a stopped server does
// nothing.
func (s *Server) Stop() { s.proc.Kill() }

// Restart stops the server if it runs and starts it again on the same
// port with the same data directory, so persistent znodes and sessions
// that have not timed out survive. It fails the test if the server does
// not come back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("zktest: restart: %v", err)
	}
}

// FourLetter sends a four-letter command (srvr, mntr, wchs, cons, ...)
// and returns the answer.
func (s *Server) FourLetter(cmd string) (string, error) {
	return fourLetter(s.Addr(), cmd, 5*time.Second)
}

func (s *Server) start() error {
	if err := s.writeConfig(); err != nil {
		return err
	}
	if err := s.proc.Start(); err != nil {
		return fmt.Errorf("zktest: %w (%s)", err, installMsg)
	}
	err := s.proc.WaitReady(context.Background(), readyTimeout, 20*time.Millisecond, func(context.Context) (bool, error) {
		// A short deadline: a server still starting may answer without
		// closing the socket.
		out, err := fourLetter(s.Addr(), "srvr", 300*time.Millisecond)
		return err == nil && strings.Contains(out, "Mode: standalone"), err
	})
	if err != nil {
		return fmt.Errorf("zktest: server on %s: %w", s.Addr(), err)
	}
	s.mu.Lock()
	s.started = time.Since(s.proc.Started())
	s.mu.Unlock()
	return nil
}

// writeConfig writes the server's config, dir/zoo.cfg.
func (s *Server) writeConfig() error {
	data := filepath.Join(s.dir, "data")
	cfg := strings.Join([]string{
		"tickTime=" + strconv.Itoa(int(TickTime/time.Millisecond)),
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(s.port),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"minSessionTimeout=" + strconv.Itoa(int(2*TickTime/time.Millisecond)),
		"maxSessionTimeout=60000",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok,mntr,wchs,wchc,cons,stat",
		// Tests need no fsync per write; the data still survives a kill.
		"forceSync=no",
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

func (s *Server) printLog() {
	s.t.Logf("zktest: last lines of the ZooKeeper log %s:\n%s", filepath.Join(s.dir, "zookeeper.log"), s.proc.LogTail(150))
}

// fourLetter sends cmd and reads the answer until the server closes.
func fourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zktest: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s: %w", cmd, err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, c); err != nil && !errors.Is(err, io.EOF) {
		return buf.String(), fmt.Errorf("zktest: %s: %w", cmd, err)
	}
	return buf.String(), nil
}
