package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"spangle/routerd/config"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/wire"
)

// TestAppTLS: a routerd whose [tls] (read from its file) has app_tls
// serves its apps, and xDS, over TLS, asks storaged over TLS, refuses
// plaintext apps with a clear 400, and stops leaving nothing behind.
func TestAppTLS(t *testing.T) {
	set := tlstest.New(t)
	peer, err := tlsconfig.New(tlsconfig.Options{Settings: set.Peer("require")})
	if err != nil {
		t.Fatal(err)
	}
	// A TLS stand-in for storaged.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sa := l.Addr().String()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg, err := wire.ParsePath(r.URL.EscapedPath())
		if err != nil || !tg.HasKey || r.TLS == nil {
			http.Error(w, "bad", 400)
			return
		}
		w.Header().Set(wire.HeaderVersion, r.Header.Get(wire.HeaderVersion))
		w.Write([]byte(r.Header.Get(wire.HeaderVersion) + ":" + string(tg.Key)))
	})}
	go hs.Serve(tls.NewListener(l, peer.ServerConfig()))
	defer hs.Close()

	base := runtime.NumGoroutine()
	mir := oneNodeMap(sa)

	path := filepath.Join(t.TempDir(), "routerd.toml")
	conf := fmt.Sprintf("bind = \"127.0.0.1:0\"\nxds_bind = \"127.0.0.1:0\"\nproxy_timeout = \"2s\"\n[tls]\ncert_file = %q\nkey_file = %q\nca_file = %q\napp_tls = true\npeer_names = [%q]\n",
		set.CertFile, set.KeyFile, set.CAFile, tlstest.PeerName)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, cfg, Deps{Watcher: mir})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	app, err := tlsconfig.New(tlsconfig.Options{Settings: set.Client()})
	if err != nil {
		t.Fatal(err)
	}
	tr := app.NewTransport()
	client := &http.Client{Transport: tr}
	getKeys(t, client, "https://"+r.Addr().String(), 5, sa)
	plain := &http.Client{Transport: &http.Transport{}}
	resp, err := plain.Get("http://" + r.Addr().String() + "/db/key")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "HTTPS") {
		t.Fatalf("plaintext app on app_tls: %d %q", resp.StatusCode, body)
	}
	// xDS speaks TLS only.
	c, err := tls.Dial("tcp", r.XDSAddr().String(), app.ClientConfig("127.0.0.1"))
	if err != nil {
		t.Fatalf("TLS to xDS: %v", err)
	}
	c.Close()
	tr.CloseIdleConnections()
	plain.CloseIdleConnections()
	cancel()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	settle(t, base)
}

func TestTLSConfigValidation(t *testing.T) {
	set := tlstest.New(t)
	for _, c := range []struct {
		tls      tlsconfig.Settings
		storaged []string
		xds      string
		ok       bool
	}{
		{set.Client(), []string{"https://127.0.0.1:1"}, "", true},
		{set.Client(), nil, "", true}, // the default storaged, made https
		{set.Client(), []string{"http://127.0.0.1:1"}, "", false},
		{tlsconfig.Settings{}, []string{"https://127.0.0.1:1"}, "", false},
		{tlsconfig.Settings{CAFile: set.CAFile}, []string{"https://127.0.0.1:1"}, "127.0.0.1:0", false}, // xDS needs a certificate
		{tlsconfig.Settings{CAFile: set.CAFile, AppTLS: true}, []string{"https://127.0.0.1:1"}, "", false},
	} {
		cfg := config.Default()
		cfg.TLS, cfg.Storaged, cfg.XDSBind = c.tls, c.storaged, c.xds
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v %v %q: Validate = %v", c.tls, c.storaged, c.xds, err)
		}
	}
}
