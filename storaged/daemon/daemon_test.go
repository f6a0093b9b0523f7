package daemon

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"spangle/shared/nodetest"
	"spangle/shared/seqfile"
	"spangle/storaged/config"
	"spangle/storaged/internal/testutil"
)

func httpGet(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	nodetest.WaitFor(t, 20*time.Second, what, cond)
}

func TestInProcessServesTestdata(t *testing.T) {
	td := testutil.TestData(t)
	cfg := config.Default()
	cfg.Source = "file://" + filepath.Join(td, "healthy")
	cfg.LocalStore = t.TempDir()
	cfg.Bind = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	d, err := Start(ctx, cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.Addr
	waitFor(t, "healthy", func() bool { c, _, _ := httpGet(t, base+"/healthz"); return c == 200 })
	for _, p := range []string{"/baby-names/1881%2Fboy", "/baby-names/1881/boy"} {
		if c, body, h := httpGet(t, base+p); c != 200 || body != "John" || h.Get("X-Sequins-Version") != "1" {
			t.Fatalf("%s: %d %q %v", p, c, body, h)
		}
	}
	cancel()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", d.Addr); err == nil {
		t.Fatal("still listening after cancel")
	}
}

// TestBinarySignals runs the real binary: SIGHUP picks up a new version,
// SIGTERM stops it cleanly, and a restart reuses the local store.
func TestBinarySignals(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "storaged")
	build := exec.Command("go", "build", "-o", bin, "spangle/storaged")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building storaged: %v\n%s", err, out)
	}
	root, storeDir := t.TempDir(), t.TempDir()
	testutil.WriteVersion(t, root, "db", "v1", 4, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(1000, "v1"))
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr

	run := func() (*exec.Cmd, *bytes.Buffer) {
		var log bytes.Buffer
		cmd := exec.Command(bin, "--source", root, "--local-store", storeDir, "--bind", addr)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitFor(t, "healthy", func() bool { c, _, _ := httpGet(t, base+"/healthz"); return c == 200 })
		return cmd, &log
	}
	cmd, log := run()
	if c, body, _ := httpGet(t, base+"/db/key-000007"); c != 200 || body != "value-7-v1" {
		t.Fatalf("v1: %d %q", c, body)
	}
	testutil.WriteVersion(t, root, "db", "v2", 4, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(1000, "v2"))
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "v2 after SIGHUP", func() bool {
		_, body, _ := httpGet(t, base+"/db/key-000007")
		return body == "value-7-v2"
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, log)
	}

	cmd, log = run()
	_, metrics, _ := httpGet(t, base+"/metrics")
	if !strings.Contains(metrics, `spangle_storaged_version_loads_total{result="reused"} 1`) ||
		strings.Contains(metrics, `spangle_storaged_version_loads_total{result="loaded"}`) {
		t.Fatalf("restart did not reuse the local store:\n%s\n%s", grep(metrics, "loads_total"), log)
	}
	if c, body, _ := httpGet(t, base+"/db/key-000007"); c != 200 || body != "value-7-v2" {
		t.Fatalf("after restart: %d %q", c, body)
	}
	// By default there is no block cache: that lookup read its block in
	// place from the mapped table file, and the cache mapped nothing.
	_, metrics, _ = httpGet(t, base+"/metrics")
	for _, want := range []string{"spangle_storaged_block_cache_misses_total 0",
		"spangle_storaged_block_cache_capacity_bytes 0", "spangle_storaged_block_cache_mapped_bytes 0"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q:\n%s", want, grep(metrics, "block_cache"))
		}
	}
	waitFor(t, "old version deleted from the local store after restart", func() bool {
		_, err := os.Stat(filepath.Join(storeDir, "db", "v1"))
		return os.IsNotExist(err)
	})
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
