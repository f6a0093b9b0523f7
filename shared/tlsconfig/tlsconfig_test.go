package tlsconfig_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"spangle/shared/certgen"
	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
)

func newSource(t *testing.T, st tlsconfig.Settings, reg prometheus.Registerer) *tlsconfig.Source {
	t.Helper()
	s, err := tlsconfig.New(tlsconfig.Options{Settings: st, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs h over TLS as src says and returns its address.
func serve(t *testing.T, src *tlsconfig.Source, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(tls.NewListener(l, src.ServerConfig()))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// get asks addr over TLS as src says.
func get(src *tlsconfig.Source, addr, path string) (*http.Response, error) {
	tr := src.NewTransport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("https://" + addr + path)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func TestNewIsNilWithoutTLS(t *testing.T) {
	s, err := tlsconfig.New(tlsconfig.Options{})
	if err != nil || s != nil {
		t.Fatalf("New(zero) = %v, %v; want nil, nil", s, err)
	}
	if s.ServerConfig() != nil || s.Scheme() != "http" {
		t.Fatal("a nil Source is not plaintext")
	}
}

// TestStartRefusesBadFiles: a start with a missing, mismatched, expired,
// not yet valid, truncated or foreign file fails, naming the file.
func TestStartRefusesBadFiles(t *testing.T) {
	set := tlstest.New(t)
	now := time.Now()
	expCert, expKey := set.Issue(t, certgen.Request{Names: []string{"127.0.0.1"}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)})
	futCert, futKey := set.Issue(t, certgen.Request{Names: []string{"127.0.0.1"}, NotBefore: now.Add(time.Hour), NotAfter: now.Add(48 * time.Hour)})
	rogueCert, rogueKey, _ := set.OtherCA(t, certgen.Request{Names: []string{"127.0.0.1"}})
	certPEM, _ := os.ReadFile(set.CertFile)
	truncated := set.Write(t, "truncated.pem", certPEM[:len(certPEM)/2])
	caPEM, _ := os.ReadFile(set.CAFile)
	truncCA := set.Write(t, "truncated-ca.pem", append(append([]byte{}, caPEM...), caPEM[:40]...))
	keyPEM, _ := os.ReadFile(set.KeyFile)
	keyAsCA := set.Write(t, "key-as-ca.pem", keyPEM)
	missing := set.Dir + "/missing.pem"
	cases := []struct {
		name, cert, key, ca, want string
	}{
		{"missing cert", missing, set.KeyFile, set.CAFile, missing},
		{"missing key", set.CertFile, missing, set.CAFile, missing},
		{"missing ca", set.CertFile, set.KeyFile, missing, missing},
		{"key of another cert", set.CertFile, set.ClientKey, set.CAFile, "key_file " + set.ClientKey + " does not match"},
		{"expired", expCert, expKey, set.CAFile, "cert_file " + expCert + ": expired"},
		{"not yet valid", futCert, futKey, set.CAFile, "cert_file " + futCert + ": not valid before"},
		{"another CA", rogueCert, rogueKey, set.CAFile, "is not signed by ca_file"},
		{"truncated cert", truncated, set.KeyFile, set.CAFile, "cert_file " + truncated},
		{"truncated ca", set.CertFile, set.KeyFile, truncCA, "ca_file " + truncCA},
		{"a key as ca", set.CertFile, set.KeyFile, keyAsCA, "ca_file " + keyAsCA},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tlsconfig.New(tlsconfig.Options{Settings: tlsconfig.Settings{CertFile: c.cert, KeyFile: c.key, CAFile: c.ca}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v; want an error holding %q", err, c.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY-----\n") {
				t.Fatalf("the error quotes a key: %v", err)
			}
		})
	}
}

func TestMutualTLS(t *testing.T) {
	set := tlstest.New(t)
	server := newSource(t, set.Peer(""), nil)
	addr := serve(t, server, ok)

	// A client of the CA, TLS 1.2 at least, resumption on.
	resp, err := get(newSource(t, set.Client(), nil), addr, "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("client of the CA: %v %v", resp, err)
	}
	if resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("TLS version %x", resp.TLS.Version)
	}

	// Without a certificate: refused by require.
	noCert := newSource(t, tlsconfig.Settings{CAFile: set.CAFile}, nil)
	if _, err := get(noCert, addr, "/"); err == nil {
		t.Fatal("a client without a certificate passed client_auth = require")
	}
	// A client certificate of another CA: refused, and counted.
	reg := prometheus.NewRegistry()
	server2 := newSource(t, set.Peer(""), reg)
	addr2 := serve(t, server2, ok)
	rc, rk, rca := set.OtherCA(t, certgen.Request{Names: []string{tlstest.PeerName}, Usage: certgen.Client})
	// It trusts our CA too, so that the refusal is the server's.
	both := append(must(os.ReadFile(rca)), must(os.ReadFile(set.CAFile))...)
	rogue := newSource(t, tlsconfig.Settings{CertFile: rc, KeyFile: rk, CAFile: set.Write(t, "both.pem", both)}, nil)
	if _, err := get(rogue, addr2, "/"); err == nil {
		t.Fatal("a client certificate of another CA passed")
	}
	if n := testutil.ToFloat64(counter(t, reg, "spangle_tls_handshakes_refused_total", "client")); n != 1 {
		t.Fatalf("refused clients counted %v, want 1", n)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// counter finds a labelled counter in reg.
func counter(t *testing.T, reg *prometheus.Registry, name, label string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return 0 })
}

// TestServerIdentity: a client accepts a server whose certificate is
// from the CA and valid for the address dialled or carries a
// peer_names identity; any other is refused with ErrPeerRefused.
func TestServerIdentity(t *testing.T) {
	set := tlstest.New(t)
	client := newSource(t, set.Client(), nil)
	cases := []struct {
		name  string
		names []string
		other bool // from another CA
		ok    bool
	}{
		{"valid for the address", []string{"127.0.0.1"}, false, true},
		{"a peer name only", []string{tlstest.PeerName}, false, true},
		{"a SPIFFE peer name", []string{"spiffe://spangle.test/storaged/a"}, false, false},
		{"another name", []string{"other.example"}, false, false},
		{"another CA", []string{"127.0.0.1", tlstest.PeerName}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cert, key, ca := "", "", set.CAFile
			if c.other {
				cert, key, ca = set.OtherCA(t, certgen.Request{Names: c.names})
			} else {
				cert, key = set.Issue(t, certgen.Request{Names: c.names})
			}
			srv := newSource(t, tlsconfig.Settings{CertFile: cert, KeyFile: key, CAFile: ca, ClientAuth: "none"}, nil)
			addr := serve(t, srv, ok)
			_, err := get(client, addr, "/")
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && !errors.Is(err, tlsconfig.ErrPeerRefused) {
				t.Fatalf("err = %v, want ErrPeerRefused", err)
			}
		})
	}
	// A SPIFFE pattern in peer_names accepts the SPIFFE identity.
	st := set.Client()
	st.PeerNames = []string{"spiffe://spangle.test/storaged/*"}
	spiffe := newSource(t, st, nil)
	cert, key := set.Issue(t, certgen.Request{Names: []string{"spiffe://spangle.test/storaged/a"}})
	addr := serve(t, newSource(t, tlsconfig.Settings{CertFile: cert, KeyFile: key, CAFile: set.CAFile, ClientAuth: "none"}, nil), ok)
	if _, err := get(spiffe, addr, "/"); err != nil {
		t.Fatalf("SPIFFE peer name refused: %v", err)
	}
}

func TestPeerOnly(t *testing.T) {
	set := tlstest.New(t)
	for _, auth := range []string{"require", "verify_if_given"} {
		t.Run(auth, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			src := newSource(t, set.Peer(auth), reg)
			addr := serve(t, src, src.PeerOnly(ok))
			if resp, err := get(newSource(t, set.Peer(""), nil), addr, "/_partition/x"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("a peer: %v %v", resp, err)
			}
			if resp, err := get(newSource(t, set.Client(), nil), addr, "/_partition/x"); err != nil || resp.StatusCode != 403 {
				t.Fatalf("a client that is no peer: %v %v, want 403", resp, err)
			}
			resp, err := get(newSource(t, tlsconfig.Settings{CAFile: set.CAFile}, nil), addr, "/_partition/x")
			switch auth {
			case "require":
				if err == nil {
					t.Fatal("no client certificate passed require")
				}
			default:
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("no client certificate with verify_if_given: %v %v, want 200", resp, err)
				}
			}
			if n := testutil.ToFloat64(gather(t, reg, "spangle_tls_peer_endpoint_forbidden_total")); n != 1 {
				t.Fatalf("forbidden counted %v, want 1", n)
			}
		})
	}
}

func gather(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return v })
		}
	}
	t.Fatalf("no %s", name)
	return nil
}

// servedSerial is the serial of the certificate addr serves, asked by a
// new client of st (a resumed session would show the first one).
func servedSerial(t *testing.T, st tlsconfig.Settings, addr string) string {
	t.Helper()
	resp, err := get(newSource(t, st, nil), addr, "/")
	if err != nil {
		t.Fatal(err)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

// TestRotation: a changed set is swapped in without a restart, a bad one
// refused (logged, counted) while the old one keeps serving, and the
// expiry metric follows.
func TestRotation(t *testing.T) {
	set := tlstest.New(t)
	reg := prometheus.NewRegistry()
	st := set.Peer("")
	src, err := tlsconfig.New(tlsconfig.Options{Settings: st, Registerer: reg, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go src.Run(ctx)
	addr := serve(t, src, ok)
	client := set.Client()
	first := servedSerial(t, client, addr)

	// Rotate: a new certificate and key written over the files.
	notAfter := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	p, err := set.CA.Issue(certgen.Request{Names: []string{"127.0.0.1", tlstest.PeerName}, NotAfter: notAfter})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(st.CertFile, st.KeyFile); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return servedSerial(t, client, addr) == p.Cert.SerialNumber.String() })
	if servedSerial(t, client, addr) == first {
		t.Fatal("the old certificate is still served")
	}
	if got := testutil.ToFloat64(gather(t, reg, "spangle_tls_cert_expiry_timestamp_seconds")); got != float64(notAfter.Unix()) {
		t.Fatalf("expiry metric %v, want %v", got, notAfter.Unix())
	}

	// A bad set: the key of another certificate. Refused, the rotated
	// one keeps serving.
	other, _ := os.ReadFile(set.ClientKey)
	if err := certgen.WriteFile(st.KeyFile, other, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); !errors.Is(err, tlsconfig.ErrRefused) {
		t.Fatalf("Reload of a mismatched key: %v, want ErrRefused", err)
	}
	if got := servedSerial(t, client, addr); got != p.Cert.SerialNumber.String() {
		t.Fatal("a refused set replaced the good one")
	}
	if n := testutil.ToFloat64(counter(t, reg, "spangle_tls_reloads_total", "refused")); n != 1 {
		t.Fatalf("refused reloads %v, want 1 (counted once per content)", n)
	}
	// An expired set is refused too.
	exp, err := set.CA.Issue(certgen.Request{Names: []string{"127.0.0.1"}, NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Write(st.CertFile, st.KeyFile); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); !errors.Is(err, tlsconfig.ErrRefused) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("Reload of an expired certificate: %v", err)
	}
	// The CA rotates too: a new CA's set is taken whole.
	ca2, err := certgen.NewCA("second CA", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := ca2.Issue(certgen.Request{Names: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := certgen.WriteFile(st.CAFile, append(append([]byte{}, set.CA.CertPEM...), ca2.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p2.Write(st.CertFile, st.KeyFile); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); err != nil {
		t.Fatalf("Reload of a new CA's set: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWrongProtocol: a plaintext client on a TLS port and a TLS client
// on a plaintext port get a clear error, and nothing is left running.
func TestWrongProtocol(t *testing.T) {
	set := tlstest.New(t)
	src := newSource(t, set.Peer(""), nil)
	before := runtime.NumGoroutine()
	func() {
		tlsAddr := serve(t, src, ok)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + tlsAddr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), "HTTPS") {
				t.Fatalf("plaintext on the TLS port: %d %q", resp.StatusCode, b)
			}
		}
		plain := httptest.NewServer(ok)
		defer plain.Close()
		_, err = get(newSource(t, set.Client(), nil), plain.Listener.Addr().String(), "/")
		if err == nil || !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("TLS on the plaintext port: %v", err)
		}
		// A client that connects and says nothing: the server's
		// handshake ends with the connection.
		c, err := net.Dial("tcp", tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+1 })
}

func TestMatchName(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"storaged.spangle.test", "storaged.spangle.test", true},
		{"storaged.spangle.test", "STORAGED.spangle.test", true},
		{"*.spangle.test", "a.spangle.test", true},
		{"*.spangle.test", "a.b.spangle.test", false},
		{"*.spangle.test", ".spangle.test", false},
		{"storaged-*.svc", "storaged-0.svc", true},
		{"storaged-*.svc", "storaged-.svc", false},
		{"spiffe://td/ns/*/sa/storaged", "spiffe://td/ns/prod/sa/storaged", true},
		{"spiffe://td/ns/*/sa/storaged", "spiffe://td/ns/a/b/sa/storaged", false},
		{"spiffe://td/*", "spiffe://td/x/y", false},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "abc", false},
	}
	for _, c := range cases {
		if got := tlsconfig.MatchName(c.pattern, c.name); got != c.want {
			t.Errorf("MatchName(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		s      tlsconfig.Settings
		server bool
		want   string
	}{
		{tlsconfig.Settings{}, true, ""},
		{tlsconfig.Settings{CertFile: "c", KeyFile: "k", CAFile: "a"}, true, ""},
		{tlsconfig.Settings{CAFile: "a"}, false, ""},
		{tlsconfig.Settings{CAFile: "a"}, true, "tls.cert_file"},
		{tlsconfig.Settings{CertFile: "c", CAFile: "a"}, false, "tls.key_file"},
		{tlsconfig.Settings{CertFile: "c", KeyFile: "k"}, false, "tls.ca_file"},
		{tlsconfig.Settings{CertFile: "c", KeyFile: "k", CAFile: "a", ClientAuth: "maybe"}, false, "tls.client_auth"},
		{tlsconfig.Settings{CertFile: "c", KeyFile: "k", CAFile: "a", PeerNames: []string{"*"}}, false, "tls.peer_names"},
		{tlsconfig.Settings{CertFile: "c", KeyFile: "k", CAFile: "a", PeerNames: []string{"*.*.*.*.*.x"}}, false, "tls.peer_names"},
		{tlsconfig.Settings{AppTLS: true}, false, "tls.app_tls"},
		{tlsconfig.Settings{PeerNames: []string{"a"}}, false, "tls.cert_file"},
	}
	for _, c := range cases {
		err := c.s.Validate(c.server)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Validate(%+v, %v) = %v, want %q", c.s, c.server, err, c.want)
		}
	}
}

// TestAcceptPlaintext: during a rollout one port serves TLS and
// plaintext, the peer endpoints answer plaintext peers, a silent
// connection does not hold up others, and closing leaves nothing
// running.
func TestAcceptPlaintext(t *testing.T) {
	set := tlstest.New(t)
	st := set.Peer("verify_if_given")
	st.AcceptPlaintext = true
	if err := st.Validate(true); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, st, nil)
	before := runtime.NumGoroutine()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: src.PeerOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			io.WriteString(w, "tls")
			return
		}
		io.WriteString(w, "plain")
	}))}
	served := make(chan struct{})
	go func() { srv.Serve(src.Listen(l)); close(served) }()
	addr := l.Addr().String()
	silent, err := net.Dial("tcp", addr) // says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	body := func(resp *http.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strconv.Itoa(resp.StatusCode) + " " + string(b)
	}
	plain := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	if got := body(plain.Get("http://" + addr + "/_partition/x")); got != "200 plain" {
		t.Fatalf("plaintext: %q", got)
	}
	if got := body(get(newSource(t, set.Peer(""), nil), addr, "/_partition/x")); !strings.HasPrefix(got, "200") {
		t.Fatalf("TLS: %q", got)
	}
	if got := body(get(newSource(t, set.Client(), nil), addr, "/_partition/x")); !strings.HasPrefix(got, "403") {
		t.Fatalf("TLS client that is no peer: %q", got)
	}
	plain.CloseIdleConnections()
	srv.Close()
	<-served
	silent.Close()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+1 })
	// require refuses plaintext: accept_plaintext is refused with it.
	st.ClientAuth = "require"
	if err := st.Validate(true); err == nil || !strings.Contains(err.Error(), "tls.accept_plaintext") {
		t.Fatalf("accept_plaintext with require: %v", err)
	}
}

// TestHandshakesCounted: each side counts the handshakes it completed,
// by whose certificate it verified and whether the session was resumed:
// a client's second connection resumes its first one's session.
func TestHandshakesCounted(t *testing.T) {
	set := tlstest.New(t)
	sreg, creg := prometheus.NewRegistry(), prometheus.NewRegistry()
	addr := serve(t, newSource(t, set.Peer(""), sreg), ok)
	client := newSource(t, set.Client(), creg)
	for i := 0; i < 2; i++ {
		resp, err := get(client, addr, "/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("get %d: %v %v", i, resp, err)
		}
		if resumed := resp.TLS.DidResume; resumed != (i == 1) {
			t.Fatalf("get %d resumed %v", i, resumed)
		}
	}
	for _, c := range []struct {
		reg           *prometheus.Registry
		peer, resumed string
	}{{sreg, "client", "false"}, {sreg, "client", "true"}, {creg, "server", "false"}, {creg, "server", "true"}} {
		if n := handshakes(t, c.reg, c.peer, c.resumed); n != 1 {
			t.Errorf("handshakes{peer=%q,resumed=%q} = %v, want 1", c.peer, c.resumed, n)
		}
	}
	if n := handshakes(t, sreg, "server", "false") + handshakes(t, creg, "client", "false"); n != 0 {
		t.Errorf("handshakes counted on the wrong side: %v", n)
	}
}

// handshakes is spangle_tls_handshakes_total{peer, resumed} in reg.
func handshakes(t *testing.T, reg *prometheus.Registry, peer, resumed string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "spangle_tls_handshakes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["peer"] == peer && got["resumed"] == resumed {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no spangle_tls_handshakes_total{peer=%q,resumed=%q}", peer, resumed)
	return 0
}

// A TLS connection from Listen, plain TLS or on a port that also takes
// plaintext, can be told to read only what was received (shared/h1fast
// does before it writes a pipelining client's answers): a read that
// would wait for the network fails at once with a temporary net.Error,
// the records received before are read, and once told to wait again the
// connection reads on.
func TestListenReceivedOnly(t *testing.T) {
	set := tlstest.New(t)
	for _, mixed := range []bool{false, true} {
		t.Run("accept_plaintext="+strconv.FormatBool(mixed), func(t *testing.T) {
			st := set.Peer("require")
			if mixed {
				st = set.Peer("verify_if_given")
				st.AcceptPlaintext = true
			}
			src := newSource(t, st, nil)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			tl := src.Listen(l)
			defer tl.Close()
			accepted := make(chan *tls.Conn, 1)
			go func() {
				defer close(accepted)
				c, err := tl.Accept()
				if err != nil {
					return
				}
				tc, ok := c.(*tls.Conn)
				if !ok {
					c.Close()
					return
				}
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() != nil {
					tc.Close()
					return
				}
				accepted <- tc
			}()
			cc, err := tls.Dial("tcp", l.Addr().String(), newSource(t, set.Client(), nil).ClientConfig("127.0.0.1"))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			c := <-accepted
			if c == nil {
				t.Fatal("Listen made no *tls.Conn that completed its handshake")
			}
			defer c.Close()
			ro, ok := c.NetConn().(interface{ ReceivedOnly(bool) })
			if !ok {
				t.Fatalf("the TLS connection's transport %T cannot read only what was received", c.NetConn())
			}
			buf := make([]byte, 64)
			ro.ReceivedOnly(true)
			start := time.Now()
			_, err = c.Read(buf)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > time.Second {
				t.Fatalf("read with nothing received: %v after %v, want a timeout at once", err, time.Since(start))
			}
			// Two records, both on the socket before the first read:
			// crypto/tls takes both with it, and the second is then
			// read without the network.
			cc.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(cc, "one")
			io.WriteString(cc, "two")
			time.Sleep(100 * time.Millisecond)
			ro.ReceivedOnly(false)
			if n, err := c.Read(buf); err != nil || string(buf[:n]) != "one" {
				t.Fatalf("first record: %q, %v", buf[:n], err)
			}
			ro.ReceivedOnly(true)
			n, err := c.Read(buf)
			ro.ReceivedOnly(false)
			if err != nil || string(buf[:n]) != "two" {
				t.Fatalf("record received with the first: %q, %v", buf[:n], err)
			}
			// Waiting again: the connection still reads.
			go io.WriteString(cc, "three")
			if n, err := c.Read(buf); err != nil || string(buf[:n]) != "three" {
				t.Fatalf("read after: %q, %v", buf[:n], err)
			}
		})
	}
}
