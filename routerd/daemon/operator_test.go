package daemon

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"spangle/routerd/config"
	"spangle/shared/topo"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBinaryVersionAndHelp: routerd's --version and --help exit 0.
func TestBinaryVersionAndHelp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "routerd")
	build := exec.Command("go", "build", "-ldflags", "-X spangle/shared/buildinfo.version=v0.0.0-optest", "-o", bin, "spangle/routerd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building routerd: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-optest") || !strings.Contains(string(out), runtime.Version()) {
		t.Errorf("--version: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `(default "127.0.0.1:9590")`) || !strings.Contains(string(out), "-debug-bind") {
		t.Errorf("--help: %v\n%s", err, out)
	}
	err = exec.Command(bin, "--no-such-flag").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("--no-such-flag: %v, want exit status 2", err)
	}
}

// TestSequinsProxyKeysAndDebugListener: sequins' [sharding] proxy keys
// are routerd's proxy_timeout and proxy_stage_timeout, with a warning
// naming them; [debug] bind serves pprof and expvar, never on bind; the
// build shows on /metrics and the status JSON.
func TestSequinsProxyKeysAndDebugListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routerd.toml")
	conf := "bind = \"127.0.0.1:0\"\n[sharding]\nproxy_timeout = \"300ms\"\nproxy_stage_timeout = \"70ms\"\n[debug]\nbind = \"127.0.0.1:0\"\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProxyTimeout != 300*time.Millisecond || cfg.ProxyStageTimeout != 70*time.Millisecond {
		t.Fatalf("proxy_timeout %v, proxy_stage_timeout %v", cfg.ProxyTimeout, cfg.ProxyStageTimeout)
	}
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := Start(ctx, cfg, Deps{Watcher: topo.NewMirror(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"sharding.proxy_timeout", "sharding.proxy_stage_timeout"} {
		if logs.FilterLevelExact(zap.WarnLevel).FilterField(zap.String("key", key)).Len() != 1 {
			t.Errorf("no warning names %s: %v", key, logs.All())
		}
	}
	if logs.FilterMessage("routerd: serving").FilterFieldKey("version").Len() != 1 {
		t.Errorf("the serving line lacks the version: %v", logs.All())
	}
	debug := "http://" + r.DebugAddr()
	if c, body := get(t, debug+"/debug/vars"); c != 200 || !strings.Contains(body, `"memstats"`) || !strings.Contains(body, `"build"`) {
		t.Errorf("/debug/vars: %d %.200s", c, body)
	}
	if c, body := get(t, debug+"/debug/pprof/"); c != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d %.200s", c, body)
	}
	base := "http://" + r.Addr().String()
	if c, _ := get(t, base+"/debug/pprof/"); c == 200 {
		t.Error("the app-facing port serves /debug/pprof/")
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, "spangle_routerd_build_info{") {
		t.Error("/metrics lacks spangle_routerd_build_info")
	}
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"build": {`) {
		t.Errorf("status JSON lacks the build: %.300s", b)
	}
	if c, _ := get(t, base+"/favicon.ico"); c != 404 {
		t.Errorf("/favicon.ico: %d", c)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `spangle_routerd_requests_total{code="400"} 0`) {
		t.Error("/favicon.ico counted as a bad request")
	}
	cancel()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestDebugBindIsNeverTheAppPort(t *testing.T) {
	_, err := config.Parse([]string{"--bind", "127.0.0.1:9590", "--debug-bind", "127.0.0.1:9590"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "debug.bind") {
		t.Fatalf("debug.bind on the app port: %v", err)
	}
}
