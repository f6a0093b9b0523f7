package s3test

import (
	"context"
	"fmt"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"spangle/shared/proctest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The root credentials the server accepts. They are test constants, never
// real secrets.
const (
	AccessKey = "spangle-test-access"
	SecretKey = "spangle-test-secret-key"
	// Region is the server's region (versitygw's default).
	Region = "us-east-1"
)

// Env names a versitygw binary to use instead of the one `make deps`
// installs.
const Env = "SPANGLE_VERSITYGW"

const installMsg = "s3test: versitygw is needed: run `make deps` (it builds the version pinned in tools/versitygw into $(go env GOPATH)/bin), or set " + Env + " to a versitygw binary"

// readyTimeout bounds a start; it is generous because other tests may be
// loading the machine.
const readyTimeout = 60 * time.Second

// Server is one versitygw process. Its methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	dir  string // the served directory: one subdirectory per bucket
	port int    // set before proc starts
	proc *proctest.Supervisor
}

// Binary returns the versitygw to run: $SPANGLE_VERSITYGW, else the one in
// $(go env GOPATH)/bin, else one on $PATH.
func Binary() (string, error) {
	if p := os.Getenv(Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %s=%s: %w", installMsg, Env, p, err)
		}
		return p, nil
	}
	gopath := build.Default.GOPATH
	if first, _, ok := strings.Cut(gopath, string(os.PathListSeparator)); ok {
		gopath = first
	}
	if gopath != "" {
		p := filepath.Join(gopath, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("%s: %w", installMsg, err)
	}
	return p, nil
}

// Start starts a server on a free loopback port, serving an empty
// temporary directory, and returns once it answers HTTP. It stops at the
// test's cleanup and prints the end of its log if the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	home := t.TempDir() // the process's working directory and log
	s.proc = proctest.NewSupervisor(proctest.Spec{Path: bin, Dir: home, Log: filepath.Join(home, "versitygw.log"),
		Env: []string{
			"ROOT_ACCESS_KEY=" + AccessKey,
			"ROOT_SECRET_KEY=" + SecretKey,
			"HOME=" + home,
			"PATH=" + os.Getenv("PATH"),
		}})
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("s3test: last lines of the versitygw log %s:\n%s", filepath.Join(home, "versitygw.log"), s.proc.LogTail(60))
		}
	})
	if _, err := proctest.OnFreePort(func(port int) error {
		s.port = port
		if err := s.start(); err != nil {
			s.Stop()
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return s
}

// Endpoint is the server's URL, for [s3] endpoint or AWS_ENDPOINT_URL_S3.
func (s *Server) Endpoint() string { return "http://" + s.Addr() }

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Dir is the directory the server serves: each top-level directory is a
// bucket, each file below it an object keyed by its path in the bucket.
func (s *Server) Dir() string { return s.dir }

// Bucket creates the bucket name (a directory) and returns its path.
func (s *Server) Bucket(name string) string {
	s.t.Helper()
	p := filepath.Join(s.dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		s.t.Fatalf("s3test: %v", err)
	}
	return p
}

// ClientEnv is the environment a client process needs to reach the
// server through the standard AWS variables.
func (s *Server) ClientEnv() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint(),
		// No shared config or IMDS lookups from a test.
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit; clients see their connections drop. Stopping a stopped server
// does nothing.
func (s *Server) Stop() { s.proc.Kill() }

// Restart stops the server if it runs and starts it again on the same
// port and directory. It fails the test if the server does not come back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("s3test: restart: %v", err)
	}
}

func (s *Server) start() error {
	// Listen on loopback only; no admin port, web UI or IAM directory is
	// configured, so the S3 port is all it opens.
	s.proc.SetArgs("--port", s.Addr(), "--region", Region, "--quiet", "posix", s.dir)
	if err := s.proc.Start(); err != nil {
		return fmt.Errorf("s3test: %w (%s)", err, installMsg)
	}
	client := &http.Client{Timeout: 500 * time.Millisecond}
	// Any HTTP answer (an anonymous request is refused) means the server
	// is up.
	err := s.proc.WaitReady(context.Background(), readyTimeout, 20*time.Millisecond,
		proctest.HTTPReady(client, s.Endpoint()+"/", func(int) bool { return true }))
	if err != nil {
		return fmt.Errorf("s3test: versitygw on %s: %w", s.Addr(), err)
	}
	return nil
}
