package xds

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"spangle/shared/certgen"
	"spangle/shared/tlsconfig"
)

// TestBootstrap parses deploy/envoy/envoy.yaml as Envoy would (YAML as
// proto JSON, unknown fields refused), checks Envoy's validation rules,
// and that it takes everything from routerd over ADS through an HTTP/2
// cluster speaking mutual TLS (xdsTLS).
func TestBootstrap(t *testing.T) {
	y, err := os.ReadFile("../deploy/envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatalf("bootstrap does not parse as Envoy's Bootstrap: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("bootstrap breaks Envoy's validation rules: %v", err)
	}
	d := b.GetDynamicResources()
	ads := d.GetAdsConfig()
	if ads.GetApiType() != corev3.ApiConfigSource_GRPC || ads.GetTransportApiVersion() != corev3.ApiVersion_V3 {
		t.Errorf("ads_config %v", ads)
	}
	if d.GetCdsConfig().GetAds() == nil || d.GetLdsConfig().GetAds() == nil {
		t.Errorf("cds/lds not over ADS: %v", d)
	}
	name := ads.GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName()
	var xds *clusterv3.Cluster
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			xds = c
		}
	}
	if xds == nil {
		t.Fatalf("no static cluster %q", name)
	}
	opts := xds.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	var po httpv3.HttpProtocolOptions
	if opts == nil || opts.UnmarshalTo(&po) != nil || po.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Errorf("xds cluster does not speak HTTP/2: %v", opts)
	}
	sa := xds.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if sa.GetPortValue() != 18000 {
		t.Errorf("xds cluster points at %v, want routerd's xDS port 18000", sa)
	}
	xdsTLS(t, xds)
}

// certsDir is where the bootstrap's certificate files are: the compose
// cluster's mount of `spangle certs`' directory.
const certsDir = "/etc/spangle/tls/"

// xdsTLS checks xds_cluster's transport socket: TLS 1.2 at least, h2 by
// ALPN, routerd's certificate files, their directory watched, and
// routerd's name matched. Then it holds the settings to what they must
// work with: a Go client built from them, on a set `spangle certs
// --router-names routerd` writes, completes a handshake with a server
// configured as routerd's xDS server is (its [tls] with client_auth =
// require, h2 offered as grpc-go offers it), and the SAN matcher takes
// routerd's certificate.
func xdsTLS(t *testing.T, xds *clusterv3.Cluster) {
	t.Helper()
	ts := xds.GetTransportSocket()
	var up tlsv3.UpstreamTlsContext
	if ts.GetName() != "envoy.transport_sockets.tls" || ts.GetTypedConfig().UnmarshalTo(&up) != nil {
		t.Fatalf("xds cluster does not speak TLS: %v", ts)
	}
	if err := up.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	common := up.GetCommonTlsContext()
	if common.GetTlsParams().GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 {
		t.Errorf("minimum TLS version %v", common.GetTlsParams())
	}
	if alpn := common.GetAlpnProtocols(); len(alpn) != 1 || alpn[0] != "h2" {
		t.Errorf("ALPN %v, want h2 (gRPC)", alpn)
	}
	certs := common.GetTlsCertificates()
	if len(certs) != 1 {
		t.Fatalf("certificates %v", certs)
	}
	vc := common.GetValidationContext()
	files := map[string]string{
		certgen.RouterFile:    certs[0].GetCertificateChain().GetFilename(),
		certgen.RouterKeyFile: certs[0].GetPrivateKey().GetFilename(),
		certgen.CAFile:        vc.GetTrustedCa().GetFilename(),
	}
	for want, got := range files {
		if got != certsDir+want {
			t.Errorf("bootstrap names %q, want %q", got, certsDir+want)
		}
	}
	for _, w := range []string{certs[0].GetWatchedDirectory().GetPath(), vc.GetWatchedDirectory().GetPath()} {
		if w+"/" != certsDir {
			t.Errorf("watched directory %q, want %q: rotated files would go unseen", w, certsDir)
		}
	}
	sans := vc.GetMatchTypedSubjectAltNames()
	if len(sans) != 1 || sans[0].GetSanType() != tlsv3.SubjectAltNameMatcher_DNS {
		t.Fatalf("SAN matchers %v", sans)
	}

	dir := t.TempDir()
	if err := certgen.WriteSet(dir, certgen.SetOptions{Names: []string{"storaged1"}, RouterNames: []string{"routerd", "localhost"}}); err != nil {
		t.Fatal(err)
	}
	local := func(path string) string { return filepath.Join(dir, strings.TrimPrefix(path, certsDir)) }
	src, err := tlsconfig.New(tlsconfig.Options{Settings: tlsconfig.Settings{CertFile: local(files[certgen.RouterFile]),
		KeyFile: local(files[certgen.RouterKeyFile]), CAFile: local(files[certgen.CAFile]), ClientAuth: tlsconfig.ClientAuthRequire}})
	if err != nil {
		t.Fatal(err)
	}
	server := src.ServerConfig().Clone()
	server.NextProtos = []string{"h2"}
	l, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*tls.Conn).Handshake()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	client, err := tlsconfig.Static(tlsconfig.Settings{CertFile: local(files[certgen.RouterFile]),
		KeyFile: local(files[certgen.RouterKeyFile]), CAFile: local(files[certgen.CAFile])}, time.Now())
	if err != nil {
		t.Fatalf("the files the bootstrap names, as spangle certs writes them: %v", err)
	}
	client.ServerName = up.GetSni()
	client.NextProtos = common.GetAlpnProtocols()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", l.Addr().String(), client)
	if err != nil {
		t.Fatalf("handshake with the bootstrap's settings: %v", err)
	}
	defer c.Close()
	cs := c.ConnectionState()
	if cs.NegotiatedProtocol != "h2" {
		t.Errorf("negotiated %q, want h2", cs.NegotiatedProtocol)
	}
	matched := false
	for _, n := range cs.PeerCertificates[0].DNSNames {
		matched = matched || n == sans[0].GetMatcher().GetExact()
	}
	if !matched {
		t.Errorf("routerd's certificate (%v) does not carry the SAN the bootstrap matches (%v)", cs.PeerCertificates[0].DNSNames, sans[0])
	}
}
