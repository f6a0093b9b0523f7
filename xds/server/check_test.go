package server

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"spangle/shared/placement"
	"spangle/shared/topo"
	"spangle/xds/luafilter"
	"spangle/xds/snapshot"
)

// testVersion describes a version of a db for clusterMap.
type testVersion struct {
	db, version string
	n           int
}

// clusterMap lays versions out over nodes as storaged would (the ring's
// round robin, replication 2), leaving out the dead nodes.
func clusterMap(nodes []string, dead map[string]bool, versions ...testVersion) *topo.Map {
	var b topo.Builder
	for _, n := range nodes {
		if !dead[n] {
			b.AddNode(topo.Node{ID: n, ShardID: n, Addr: n})
		}
	}
	for _, v := range versions {
		b.AddVersion(v.db, v.version, topo.VersionInfo{NumPartitions: v.n})
		for p, holders := range placement.Holders(nodes, v.n, 2) {
			for _, h := range holders {
				if !dead[h] {
					b.AddReplica(v.db, v.version, p, h)
				}
			}
		}
	}
	return b.Build(0)
}

// matches checks that a client holds exactly what m and served give: a
// valid cluster and load assignment per partition of each served version
// with exactly the partition's replicas, the routerd cluster, a route per
// partition with replicas, and a listener whose script knows each db.
func matches(m *topo.Map, served map[string]string) func(*xdsState) error {
	return func(st *xdsState) error {
		want := map[string][]string{} // cluster -> replicas
		for db, v := range served {
			for p := 0; p < m.Version(db, v).NumPartitions; p++ {
				want[snapshot.ClusterName("spangle", db, v, p)] = m.Replicas(db, v, p)
			}
		}
		if len(st.clusters) != len(want)+1 || st.clusters["spangle/routerd"] == nil {
			return fmt.Errorf("%d clusters, want %d", len(st.clusters), len(want)+1)
		}
		for name, c := range st.clusters {
			if _, ok := want[name]; !ok && name != "spangle/routerd" {
				return fmt.Errorf("unexpected cluster %s", name)
			}
			if err := c.Validate(); err != nil {
				return fmt.Errorf("cluster %s: %w", name, err)
			}
		}
		if len(st.endpoints) != len(want) {
			return fmt.Errorf("%d load assignments, want %d", len(st.endpoints), len(want))
		}
		for name, reps := range want {
			cla := st.endpoints[name]
			if cla == nil {
				return fmt.Errorf("no load assignment for %s", name)
			}
			if err := cla.Validate(); err != nil {
				return fmt.Errorf("load assignment %s: %w", name, err)
			}
			var got []string
			for _, l := range cla.GetEndpoints() {
				for _, lb := range l.GetLbEndpoints() {
					sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
					got = append(got, net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))))
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(reps, ",") {
				return fmt.Errorf("%s has endpoints %v, want %v", name, got, reps)
			}
		}
		rc := st.routes["spangle"]
		if rc == nil || len(st.routes) != 1 {
			return fmt.Errorf("route configurations %d, want just spangle", len(st.routes))
		}
		if err := rc.Validate(); err != nil {
			return fmt.Errorf("routes: %w", err)
		}
		routed := map[string]bool{}
		for _, r := range rc.GetVirtualHosts()[0].GetRoutes() {
			c := r.GetRoute().GetCluster()
			if c == "spangle/routerd" {
				continue
			}
			reps, ok := want[c]
			if !ok {
				return fmt.Errorf("route %s to unknown cluster %s", r.GetName(), c)
			}
			parts := strings.Split(c, "/")
			h := r.GetMatch().GetHeaders()
			if r.GetMatch().GetPrefix() != "/"+parts[1]+"/" || len(h) != 2 ||
				h[0].GetName() != luafilter.HeaderPartition || h[0].GetStringMatch().GetExact() != parts[3] ||
				h[1].GetStringMatch().GetExact() != parts[2] {
				return fmt.Errorf("route %s matches %v", r.GetName(), r.GetMatch())
			}
			if got := r.GetRoute().GetRetryPolicy().GetNumRetries().GetValue(); int(got) != len(reps)-1 {
				return fmt.Errorf("route %s retries %d times, want %d", r.GetName(), got, len(reps)-1)
			}
			routed[c] = true
		}
		for c, reps := range want {
			if routed[c] != (len(reps) > 0) {
				return fmt.Errorf("cluster %s routed %v with %d replicas", c, routed[c], len(reps))
			}
		}
		l := st.listeners["spangle"]
		if l == nil || len(st.listeners) != 1 {
			return fmt.Errorf("listeners %d, want just spangle", len(st.listeners))
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("listener: %w", err)
		}
		var hcm hcmv3.HttpConnectionManager
		if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			return err
		}
		var lua luav3.Lua
		if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&lua); err != nil {
			return err
		}
		script := lua.GetDefaultSourceCode().GetInlineString()
		if got := strings.Count(script, "] = { n = "); got != len(served) {
			return fmt.Errorf("script knows %d dbs, want %d", got, len(served))
		}
		for db, v := range served {
			entry := fmt.Sprintf("[%q] = { n = %d, version = %q }", db, m.Version(db, v).NumPartitions, v)
			if !strings.Contains(script, entry) {
				return fmt.Errorf("script lacks %s", entry)
			}
		}
		return nil
	}
}

// holds reports whether any resource of st names addr.
func holds(st *xdsState, addr string) bool {
	for _, cla := range st.endpoints {
		for _, l := range cla.GetEndpoints() {
			for _, lb := range l.GetLbEndpoints() {
				sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
				if net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))) == addr {
					return true
				}
			}
		}
	}
	return false
}
