package xds

import (
	"os"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// TestBootstrap parses deploy/envoy/envoy.yaml as Envoy would (YAML as
// proto JSON, unknown fields refused), checks Envoy's validation rules,
// and that it takes everything from routerd over ADS through an HTTP/2
// cluster.
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
}
