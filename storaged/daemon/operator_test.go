package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"

	"spangle/shared/seqfile"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

// buildStoraged builds the binary with a version set as the Makefile sets it.
func buildStoraged(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "storaged")
	build := exec.Command("go", "build", "-ldflags", "-X spangle/shared/buildinfo.version=v0.0.0-optest", "-o", bin, "spangle/storaged")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building storaged: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestBinaryVersionAndHelp: --version and --help exit 0; the help shows
// the real defaults and hides the test-only flags.
func TestBinaryVersionAndHelp(t *testing.T) {
	bin := buildStoraged(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-optest") || !strings.Contains(string(out), runtime.Version()) ||
		!strings.Contains(string(out), "commit") {
		t.Errorf("--version: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Errorf("--help: %v", err)
	}
	help := string(out)
	for _, want := range []string{"(default 5s)", `(default "0.0.0.0:9599")`, `(default "/var/lib/spangle/storaged")`,
		"(default 10m0s)", `(default "json")`, "-debug-bind"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for _, bad := range []string{"-1ns", "(default -1)", "test-delay"} {
		if strings.Contains(help, bad) {
			t.Errorf("--help shows %q:\n%s", bad, help)
		}
	}
	// A bad flag is a usage error, status 2.
	err = exec.Command(bin, "--no-such-flag").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("--no-such-flag: %v, want exit status 2", err)
	}
}

// TestBinarySequinsConfig starts the binary on a sequins config: a
// standalone one that keeps a [zk] section, sets sequins-only keys and
// S3 credentials, and binds the debug listener.
func TestBinarySequinsConfig(t *testing.T) {
	bin := buildStoraged(t)
	root, storeDir := t.TempDir(), t.TempDir()
	testutil.WriteVersion(t, root, "db", "v1", 2, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(100, "v1"))
	addr, debugAddr := freeAddr(t), freeAddr(t)
	conf := `
source = "` + root + `"
local_store = "` + storeDir + `"
bind = "` + addr + `"
throttle_loads = "800µs"
log_format = "console"
settle_time = "0s"

[s3]
access_key_id = "AKIDNEVERLOGGED"
secret_access_key = "secret-never-logged"

[sharding]
enabled = false
proxy_timeout = "100ms"

[zk]
servers = ["127.0.0.1:1"]

[datadog]
url = "localhost:8200"

[debug]
bind = "` + debugAddr + `"
expvars = true
pprof = true
`
	path := filepath.Join(t.TempDir(), "sequins.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	waitFor(t, "healthy standalone", func() bool { c, _, _ := httpGet(t, base+"/healthz"); return c == 200 })
	if c, body, _ := httpGet(t, base+"/db/key-000007"); c != 200 || body != "value-7-v1" {
		t.Fatalf("lookup: %d %q", c, body)
	}
	if _, metrics, _ := httpGet(t, base+"/metrics"); !strings.Contains(metrics, `spangle_storaged_build_info{commit=`) ||
		!strings.Contains(metrics, `version="v0.0.0-optest"} 1`) {
		t.Errorf("metrics lack the build info:\n%s", grep(metrics, "build_info"))
	}
	if c, body, _ := httpGet(t, "http://"+debugAddr+"/debug/vars"); c != 200 || !strings.Contains(body, `"memstats"`) ||
		!strings.Contains(body, "v0.0.0-optest") {
		t.Errorf("/debug/vars: %d %.300s", c, body)
	}
	if c, body, _ := httpGet(t, "http://"+debugAddr+"/debug/pprof/"); c != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d %.300s", c, body)
	}
	if c, _, _ := httpGet(t, base+"/debug/pprof/"); c == 200 {
		t.Error("the lookup port serves /debug/pprof/")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
	}
	out := log.String()
	for _, want := range []string{"WARN", "throttle_loads", "s3.secret_access_key", "AWS chain", "sharding.proxy_timeout", "routerd",
		"datadog.url", "standalone", "storaged listening", "v0.0.0-optest"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"AKIDNEVERLOGGED", "secret-never-logged", `{"level"`, "stacktrace", "zktopo"} {
		if strings.Contains(out, bad) {
			t.Errorf("log shows %q:\n%s", bad, out)
		}
	}
}

// TestREADMEBatchExample runs the README's batch lookup, as printed,
// against a storaged serving make run's sample data, and compares the
// answer with the one the README prints.
func TestREADMEBatchExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	var keys, want string
	for i, l := range lines {
		if strings.HasPrefix(l, "printf '") && strings.Contains(l, "--data-binary") && i+1 < len(lines) {
			keys, _, _ = strings.Cut(strings.TrimPrefix(l, "printf '"), "'")
			want = strings.TrimPrefix(lines[i+1], "# ")
			if !strings.Contains(l, "http://127.0.0.1:9590/baby-names") {
				t.Fatalf("the example does not ask routerd for make run's db: %s", l)
			}
			break
		}
	}
	if keys == "" || want == "" {
		t.Fatal("no batch example in the README")
	}
	cfg := config.Default()
	cfg.Source = filepath.Join("..", "..", "testdata", "sample")
	cfg.LocalStore, cfg.Bind = t.TempDir(), "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.Addr
	waitFor(t, "healthy", func() bool { c, _, _ := httpGet(t, base+"/healthz"); return c == 200 })
	body := strings.ReplaceAll(keys, `\n`, "\n")
	resp, err := http.Post(base+"/baby-names", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("answer %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the README's answer %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("README prints %s; storaged answers %s", want, got)
	}
	cancel()
	d.Wait()
}
