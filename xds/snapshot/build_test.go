package snapshot

import (
	"reflect"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"spangle/shared/topo"
	"spangle/xds/luafilter"
)

// testMap has db "a" with an old and a new version, and db "b" whose
// partition 2 lost its replicas.
func testMap() *topo.Map {
	var b topo.Builder
	for _, n := range []string{"127.0.0.1:7001", "127.0.0.2:7001", "127.0.0.3:7001"} {
		b.AddNode(topo.Node{ID: n, ShardID: n, Addr: n})
	}
	b.AddVersion("a", "v1", topo.VersionInfo{NumPartitions: 2})
	b.AddReplica("a", "v1", 0, "127.0.0.1:7001")
	b.AddReplica("a", "v1", 1, "127.0.0.2:7001")
	b.AddVersion("a", "v2", topo.VersionInfo{NumPartitions: 3})
	b.AddReplica("a", "v2", 0, "127.0.0.1:7001")
	b.AddReplica("a", "v2", 0, "127.0.0.2:7001")
	b.AddReplica("a", "v2", 1, "127.0.0.2:7001")
	b.AddReplica("a", "v2", 1, "127.0.0.3:7001")
	b.AddReplica("a", "v2", 2, "127.0.0.3:7001")
	b.AddReplica("a", "v2", 2, "127.0.0.1:7001")
	b.AddVersion("b", "x", topo.VersionInfo{NumPartitions: 3})
	b.AddReplica("b", "x", 0, "127.0.0.1:7001")
	b.AddReplica("b", "x", 1, "storaged-2:7001")
	return b.Build(1)
}

var testOpts = Options{RouterdAddr: "127.0.0.1:8080", ProxyTimeout: 200 * time.Millisecond, ProxyStageTimeout: 40 * time.Millisecond}

func build(t *testing.T, in Input, o Options) *Resources {
	t.Helper()
	r, err := Build(in, o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Snapshot("1")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []resource.Type{resource.ClusterType, resource.EndpointType, resource.RouteType, resource.ListenerType} {
		for name, res := range s.GetResources(typ) {
			if err := res.(interface{ Validate() error }).Validate(); err != nil {
				t.Errorf("%s %s: %v", typ, name, err)
			}
		}
	}
	return r
}

func TestBuild(t *testing.T) {
	m := testMap()
	r := build(t, Input{Map: m, Served: map[string]string{"a": "v2", "b": "x", "gone": "v1"}, Resolved: map[string]string{}}, testOpts)

	if want := []string{"gone"}; !reflect.DeepEqual(r.Missing, want) {
		t.Errorf("Missing = %v, want %v", r.Missing, want)
	}
	if want := []string{"storaged-2:7001"}; !reflect.DeepEqual(r.Unresolved, want) {
		t.Errorf("Unresolved = %v, want %v", r.Unresolved, want)
	}
	// One cluster per partition of the served versions, plus routerd.
	var names []string
	for _, c := range r.Clusters {
		c := c.(*clusterv3.Cluster)
		names = append(names, c.Name)
		if c.Name == "spangle/routerd" {
			if c.GetType() != clusterv3.Cluster_STATIC {
				t.Errorf("routerd cluster type %v", c.GetType())
			}
			continue
		}
		if c.GetType() != clusterv3.Cluster_EDS || c.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil {
			t.Errorf("cluster %s is not EDS over ADS", c.Name)
		}
		if c.GetOutlierDetection().GetConsecutive_5Xx().GetValue() == 0 || len(c.GetCircuitBreakers().GetThresholds()) != 1 {
			t.Errorf("cluster %s lacks outlier detection or circuit breakers", c.Name)
		}
	}
	want := []string{"spangle/a/v2/0", "spangle/a/v2/1", "spangle/a/v2/2", "spangle/b/x/0", "spangle/b/x/1", "spangle/b/x/2", "spangle/routerd"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("clusters %v, want %v", names, want)
	}
	// Endpoints are exactly the replicas (resolvable ones).
	for _, e := range r.Endpoints {
		cla := e.(*endpointv3.ClusterLoadAssignment)
		parts := strings.Split(cla.ClusterName, "/")
		var p int
		for _, c := range parts[3] {
			p = p*10 + int(c-'0')
		}
		var got []string
		for _, l := range cla.GetEndpoints() {
			for _, lb := range l.GetLbEndpoints() {
				sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
				got = append(got, sa.GetAddress()+":"+itoa(sa.GetPortValue()))
			}
		}
		wantReps := m.Replicas(parts[1], parts[2], p)
		if parts[1] == "b" && p == 1 {
			wantReps = nil // unresolved host
		}
		if !reflect.DeepEqual(got, wantReps) {
			t.Errorf("%s endpoints %v, want %v", cla.ClusterName, got, wantReps)
		}
	}

	rc := r.Routes[0].(*routev3.RouteConfiguration)
	routes := rc.GetVirtualHosts()[0].GetRoutes()
	var rnames []string
	for _, rt := range routes {
		rnames = append(rnames, rt.Name)
	}
	// b/1's only replica is unresolved; b/2 has none at all.
	wantRoutes := []string{"a/0", "a/1", "a/2", "a/routerd", "b/0", "b/routerd", "batch", "routerd"}
	if !reflect.DeepEqual(rnames, wantRoutes) {
		t.Errorf("routes %v, want %v", rnames, wantRoutes)
	}
	a1 := routes[1]
	if a1.GetMatch().GetPrefix() != "/a/" || len(a1.GetMatch().GetHeaders()) != 2 ||
		a1.GetMatch().GetHeaders()[0].GetName() != luafilter.HeaderPartition ||
		a1.GetMatch().GetHeaders()[0].GetStringMatch().GetExact() != "1" ||
		a1.GetMatch().GetHeaders()[1].GetStringMatch().GetExact() != "v2" {
		t.Errorf("route a/1 match %v", a1.GetMatch())
	}
	act := a1.GetRoute()
	if act.GetCluster() != "spangle/a/v2/1" || act.GetTimeout().AsDuration() != 200*time.Millisecond {
		t.Errorf("route a/1 action %v", act)
	}
	rp := act.GetRetryPolicy()
	if rp.GetRetryOn() != RetryOn || rp.GetNumRetries().GetValue() != 1 || rp.GetPerTryTimeout().AsDuration() != 40*time.Millisecond {
		t.Errorf("route a/1 retry policy %v", rp)
	}
	// Envoy asks another replica on a 410 and a 421, as routerd does.
	if c := rp.GetRetriableStatusCodes(); len(c) != 2 || c[0] != 410 || c[1] != 421 {
		t.Errorf("route a/1 retriable status codes %v, want [410 421]", c)
	}
	if !act.GetHedgePolicy().GetHedgeOnPerTryTimeout() {
		t.Errorf("route a/1 does not hedge")
	}
	if h := a1.GetRequestHeadersToAdd(); len(h) != 1 || h[0].GetHeader().GetKey() != "X-Sequins-Version" || h[0].GetHeader().GetValue() != "v2" {
		t.Errorf("route a/1 headers to add %v", h)
	}
	if routes[3].GetRoute().GetCluster() != "spangle/routerd" || routes[3].GetMatch().GetHeaders() != nil {
		t.Errorf("fallback route %v", routes[3])
	}

	// A batch (POST /<db>) goes to routerd with a batch's bound, not a
	// lookup's proxy_timeout: max(batch_timeout, proxy_timeout) +
	// proxy_timeout.
	batch := routes[6]
	if batch.GetMatch().GetPrefix() != "/" || len(batch.GetMatch().GetHeaders()) != 1 ||
		batch.GetMatch().GetHeaders()[0].GetName() != ":method" ||
		batch.GetMatch().GetHeaders()[0].GetStringMatch().GetExact() != "POST" {
		t.Errorf("batch route match %v", batch.GetMatch())
	}
	if batch.GetRoute().GetCluster() != "spangle/routerd" || batch.GetRoute().GetTimeout().AsDuration() != DefaultBatchTimeout+200*time.Millisecond {
		t.Errorf("batch route action %v", batch.GetRoute())
	}
	for _, c := range []struct {
		batch, proxy, want time.Duration
	}{
		{0, 0, DefaultBatchTimeout + DefaultProxyTimeout},
		{3 * time.Second, 100 * time.Millisecond, 3100 * time.Millisecond},
		// batch_timeout shorter than proxy_timeout counts as it, as in routerd.
		{50 * time.Millisecond, time.Second, 2 * time.Second},
	} {
		if got := BatchRouteTimeout(Options{BatchTimeout: c.batch, ProxyTimeout: c.proxy}); got != c.want {
			t.Errorf("BatchRouteTimeout(batch %v, proxy %v) = %v, want %v", c.batch, c.proxy, got, c.want)
		}
	}

	// The listener runs the script for exactly the served dbs, then routes.
	l := r.Listeners[0].(*listenerv3.Listener)
	if l.GetAddress().GetSocketAddress().GetPortValue() != DefaultListenerPort {
		t.Errorf("listener address %v", l.GetAddress())
	}
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	if hcm.GetRds().GetRouteConfigName() != "spangle" || hcm.GetRds().GetConfigSource().GetAds() == nil {
		t.Errorf("hcm rds %v", hcm.GetRds())
	}
	fs := hcm.GetHttpFilters()
	if len(fs) != 2 || fs[0].GetName() != "envoy.filters.http.lua" || fs[1].GetName() != "envoy.filters.http.router" {
		t.Fatalf("http filters %v", fs)
	}
	var lua luav3.Lua
	if err := fs[0].GetTypedConfig().UnmarshalTo(&lua); err != nil {
		t.Fatal(err)
	}
	script, _ := luafilter.Script([]luafilter.DB{{Name: "a", Version: "v2", NumPartitions: 3}, {Name: "b", Version: "x", NumPartitions: 3}})
	if lua.GetDefaultSourceCode().GetInlineString() != script {
		t.Errorf("listener carries another script")
	}
}

func itoa(u uint32) string {
	const digits = "0123456789"
	if u < 10 {
		return digits[u : u+1]
	}
	return itoa(u/10) + digits[u%10:u%10+1]
}

func TestResolvedHostsAndDNSRouterd(t *testing.T) {
	o := testOpts
	o.RouterdAddr = "routerd:8080"
	r := build(t, Input{Map: testMap(), Served: map[string]string{"b": "x"}, Resolved: map[string]string{"storaged-2": "10.0.0.2"}}, o)
	if len(r.Unresolved) != 0 {
		t.Errorf("Unresolved = %v", r.Unresolved)
	}
	cla := r.Endpoints[1].(*endpointv3.ClusterLoadAssignment)
	ep := cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint()
	if ep.GetAddress().GetSocketAddress().GetAddress() != "10.0.0.2" || ep.GetHostname() != "storaged-2:7001" {
		t.Errorf("resolved endpoint %v", ep)
	}
	rc := r.Clusters[len(r.Clusters)-1].(*clusterv3.Cluster)
	if rc.GetType() != clusterv3.Cluster_STRICT_DNS {
		t.Errorf("routerd by name is %v, want STRICT_DNS", rc.GetType())
	}
}

func TestNothingServed(t *testing.T) {
	r := build(t, Input{Map: topo.EmptyMap()}, testOpts)
	if len(r.Clusters) != 1 || len(r.Endpoints) != 0 || len(r.Routes) != 1 || len(r.Listeners) != 1 {
		t.Errorf("empty map gave %d clusters, %d endpoints, %d routes, %d listeners",
			len(r.Clusters), len(r.Endpoints), len(r.Routes), len(r.Listeners))
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Build(Input{Map: testMap()}, Options{}); err == nil {
		t.Error("no routerd address accepted")
	}
	if _, err := Build(Input{Map: testMap()}, Options{RouterdAddr: "h:0"}); err == nil {
		t.Error("port 0 accepted")
	}
	if _, err := Build(Input{}, testOpts); err == nil {
		t.Error("nil map accepted")
	}
	// A snapshot missing an endpoint assignment is refused.
	r, err := Build(Input{Map: testMap(), Served: map[string]string{"a": "v2"}}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	r.Endpoints = r.Endpoints[1:]
	if _, err := r.Snapshot("2"); err == nil {
		t.Error("inconsistent snapshot accepted")
	}
	// So is one whose resource breaks its validation rules.
	r, _ = Build(Input{Map: testMap(), Served: map[string]string{"a": "v2"}}, testOpts)
	r.Clusters[0].(*clusterv3.Cluster).Name = ""
	if _, err := r.Snapshot("3"); err == nil {
		t.Error("invalid cluster accepted")
	}
}

func TestEqual(t *testing.T) {
	in := Input{Map: testMap(), Served: map[string]string{"a": "v2"}}
	r1, _ := Build(in, testOpts)
	r2, _ := Build(in, testOpts)
	if !r1.Equal(r2) {
		t.Error("same input built unequal resources")
	}
	in.Served = map[string]string{"a": "v1"}
	r3, _ := Build(in, testOpts)
	if r1.Equal(r3) {
		t.Error("another version built equal resources")
	}
	var _ []types.Resource = r3.Clusters
}
