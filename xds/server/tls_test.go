package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"spangle/shared/tlsconfig"
	"spangle/shared/tlstest"
	"spangle/shared/topo"
	"spangle/xds/snapshot"
)

// TestTLS: with TLS on, ADS is served over TLS only, and every storaged
// cluster carries an UpstreamTlsContext (client certificate and
// validation context from files) that the independent client decodes and
// validates.
func TestTLS(t *testing.T) {
	set := tlstest.New(t)
	src, err := tlsconfig.New(tlsconfig.Options{Settings: set.Peer("")})
	if err != nil {
		t.Fatal(err)
	}
	client, err := tlsconfig.New(tlsconfig.Options{Settings: set.Client()})
	if err != nil {
		t.Fatal(err)
	}
	mirror := topo.NewMirror()
	m := clusterMap(nodes, nil, testVersion{"a", "v1", 2})
	mirror.Publish(m)
	up := &snapshot.UpstreamTLS{CertFile: set.ClientCert, KeyFile: set.ClientKey, CAFile: set.CAFile,
		PeerNames: []string{tlstest.PeerName, "spiffe://spangle.test/storaged/*"}}
	h := startServer(t, mirror, Options{TLS: src.ServerConfig(), Tuning: snapshot.Options{UpstreamTLS: up}})

	// Plaintext gRPC (the harness's connection) gets no stream.
	pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(h.conn).StreamAggregatedResources(pctx); err == nil {
		s.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resource.ClusterType})
		if _, err := s.Recv(); err == nil {
			t.Fatal("a plaintext client got an answer from the TLS xDS server")
		}
	}

	conn, err := grpc.NewClient(h.srv.opts.Listener.Addr().String(),
		grpc.WithTransportCredentials(credentials.NewTLS(client.ClientConfig("127.0.0.1"))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := startSotW(ctx, t, conn, "envoy-tls")
	served := map[string]string{"a": "v1"}
	if _, err := c.waitFor(waitCtx(t, 10*time.Second), func(st *xdsState) error {
		if err := matches(m, served)(st); err != nil {
			return err
		}
		return upstreamTLSIn(st, up)
	}); err != nil {
		t.Fatal(err)
	}
}

// upstreamTLSIn checks that every storaged cluster of st speaks TLS as up
// says, and the routerd cluster does not.
func upstreamTLSIn(st *xdsState, up *snapshot.UpstreamTLS) error {
	n := 0
	for name, cl := range st.clusters {
		if err := cl.ValidateAll(); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		ts := cl.GetTransportSocket()
		if name == snapshot.RouterdClusterName(snapshot.DefaultName) {
			if ts != nil {
				return fmt.Errorf("the routerd cluster speaks TLS")
			}
			continue
		}
		if ts.GetName() != snapshot.TLSTransportSocket {
			return fmt.Errorf("cluster %s: transport socket %q", name, ts.GetName())
		}
		var ctx tlsv3.UpstreamTlsContext
		if err := ts.GetTypedConfig().UnmarshalTo(&ctx); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		if err := ctx.ValidateAll(); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		common := ctx.GetCommonTlsContext()
		certs := common.GetTlsCertificates()
		if len(certs) != 1 || certs[0].GetCertificateChain().GetFilename() != up.CertFile || certs[0].GetPrivateKey().GetFilename() != up.KeyFile {
			return fmt.Errorf("cluster %s: certificates %v", name, certs)
		}
		vc := common.GetValidationContext()
		if vc.GetTrustedCa().GetFilename() != up.CAFile || len(vc.GetMatchTypedSubjectAltNames()) != 2 {
			return fmt.Errorf("cluster %s: validation context %v", name, vc)
		}
		if typ := vc.GetMatchTypedSubjectAltNames()[1].GetSanType(); typ != tlsv3.SubjectAltNameMatcher_URI {
			return fmt.Errorf("cluster %s: the SPIFFE peer name is matched as %v", name, typ)
		}
		if common.GetTlsParams().GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 {
			return fmt.Errorf("cluster %s: minimum TLS version %v", name, common.GetTlsParams())
		}
		n++
	}
	if n == 0 {
		return errors.New("no storaged cluster")
	}
	return nil
}
