package snapshot

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"spangle/shared/topo"
	"spangle/xds/luafilter"
)

// Input is what a snapshot is built from.
type Input struct {
	// Map is the partition map.
	Map *topo.Map
	// Served is the version Envoy routes each db to. A db missing here,
	// or whose version is not in Map, gets no partition routes: Envoy
	// sends its requests to routerd.
	Served map[string]string
	// Resolved maps storaged host names to IP addresses. Envoy takes only
	// IP addresses from EDS, so a replica whose host is neither an IP nor
	// in Resolved is left out (and listed in Resources.Unresolved).
	Resolved map[string]string
}

// Served is one db as routed by Envoy.
type Served struct {
	DB, Version   string
	NumPartitions int
}

// Resources is one generation of xDS resources, in a stable order.
type Resources struct {
	Clusters  []types.Resource
	Endpoints []types.Resource
	Routes    []types.Resource
	Listeners []types.Resource
	// DBs lists the dbs routed to storaged, sorted by name.
	DBs []Served
	// Unresolved lists replica addresses left out because their host
	// could not be resolved to an IP.
	Unresolved []string
	// Missing lists dbs whose served version is not in the map.
	Missing []string
}

// ClusterName is the name of the cluster, and of its endpoint
// assignment, that holds the replicas of one partition of one version.
// Naming the version keeps two versions' clusters apart during a switch.
func ClusterName(prefix, db, version string, partition int) string {
	return prefix + "/" + db + "/" + version + "/" + strconv.Itoa(partition)
}

// RouterdClusterName is the name of the cluster of routerd itself.
func RouterdClusterName(prefix string) string { return prefix + "/routerd" }

// Build generates the resources for in.
func Build(in Input, opts Options) (*Resources, error) {
	opts = opts.withDefaults()
	if in.Map == nil {
		return nil, errors.New("snapshot: nil map")
	}
	r := &Resources{}
	var ts *corev3.TransportSocket
	if opts.UpstreamTLS != nil {
		var err error
		if ts, err = upstreamTransport(opts.UpstreamTLS); err != nil {
			return nil, err
		}
	}
	var scriptDBs []luafilter.DB
	endpoints := map[string]int{} // cluster name -> endpoints Envoy gets
	dbs := make([]string, 0, len(in.Served))
	for db := range in.Served {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	for _, db := range dbs {
		version := in.Served[db]
		v := in.Map.Version(db, version)
		if v == nil {
			r.Missing = append(r.Missing, db)
			continue
		}
		r.DBs = append(r.DBs, Served{DB: db, Version: version, NumPartitions: v.NumPartitions})
		scriptDBs = append(scriptDBs, luafilter.DB{Name: db, Version: version, NumPartitions: v.NumPartitions})
		for p := 0; p < v.NumPartitions; p++ {
			name := ClusterName(opts.Name, db, version, p)
			c := partitionCluster(name, opts)
			c.TransportSocket = ts // nil: plaintext
			r.Clusters = append(r.Clusters, c)
			cla, unresolved := loadAssignment(name, in.Map.Replicas(db, version, p), in.Resolved)
			r.Endpoints = append(r.Endpoints, cla)
			endpoints[name] = len(cla.GetEndpoints()) // 0 or 1 locality
			if len(cla.GetEndpoints()) == 1 {
				endpoints[name] = len(cla.GetEndpoints()[0].GetLbEndpoints())
			}
			r.Unresolved = append(r.Unresolved, unresolved...)
		}
	}
	rc, err := routerdCluster(opts)
	if err != nil {
		return nil, err
	}
	r.Clusters = append(r.Clusters, rc)
	routes, err := routeConfig(r.DBs, endpoints, opts)
	if err != nil {
		return nil, err
	}
	r.Routes = []types.Resource{routes}
	script, err := luafilter.Script(scriptDBs)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	l, err := listener(script, opts)
	if err != nil {
		return nil, err
	}
	r.Listeners = []types.Resource{l}
	return r, nil
}

// Equal reports whether r and o would give Envoy the same configuration,
// so that an unchanged map does not cost every Envoy a new push.
func (r *Resources) Equal(o *Resources) bool {
	if r == nil || o == nil {
		return r == o
	}
	eq := func(a, b []types.Resource) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !proto.Equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return eq(r.Clusters, o.Clusters) && eq(r.Endpoints, o.Endpoints) &&
		eq(r.Routes, o.Routes) && eq(r.Listeners, o.Listeners)
}

// Snapshot wraps the resources in a snapshot of the given version and
// checks it with Check.
func (r *Resources) Snapshot(version string) (*cachev3.Snapshot, error) {
	s, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{
		resource.ClusterType:  r.Clusters,
		resource.EndpointType: r.Endpoints,
		resource.RouteType:    r.Routes,
		resource.ListenerType: r.Listeners,
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := Check(s); err != nil {
		return nil, err
	}
	return s, nil
}

// validator is what every generated Envoy message implements
// (protoc-gen-validate's rules from Envoy's API).
type validator interface {
	ValidateAll() error
}

// Check reports why s must not be served: a resource that breaks its
// API's validation rules, a route to a cluster that is not there, or an
// endpoint or route set that its clusters or listeners do not name
// exactly (go-control-plane's Consistent).
func Check(s *cachev3.Snapshot) error {
	if err := s.Consistent(); err != nil {
		return fmt.Errorf("snapshot: inconsistent: %w", err)
	}
	for _, typ := range []resource.Type{resource.ClusterType, resource.EndpointType, resource.RouteType, resource.ListenerType} {
		for name, res := range s.GetResources(typ) {
			v, ok := res.(validator)
			if !ok {
				return fmt.Errorf("snapshot: %s %q cannot be validated", typ, name)
			}
			if err := v.ValidateAll(); err != nil {
				return fmt.Errorf("snapshot: %s %q: %w", typ, name, err)
			}
		}
	}
	clusters := s.GetResources(resource.ClusterType)
	for _, res := range s.GetResources(resource.RouteType) {
		for _, c := range routeClusters(res) {
			if _, ok := clusters[c]; !ok {
				return fmt.Errorf("snapshot: a route sends to cluster %q, which is missing", c)
			}
		}
	}
	return nil
}
