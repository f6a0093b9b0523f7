package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// xdsState is what a client holds after a response: every resource by
// name, and the last version of each type. It is never modified once
// published; each response makes a new one.
type xdsState struct {
	clusters  map[string]*clusterv3.Cluster
	endpoints map[string]*endpointv3.ClusterLoadAssignment
	routes    map[string]*routev3.RouteConfiguration
	listeners map[string]*listenerv3.Listener
	versions  map[string]string
}

func newState() *xdsState {
	return &xdsState{
		clusters:  map[string]*clusterv3.Cluster{},
		endpoints: map[string]*endpointv3.ClusterLoadAssignment{},
		routes:    map[string]*routev3.RouteConfiguration{},
		listeners: map[string]*listenerv3.Listener{},
		versions:  map[string]string{},
	}
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *xdsState) clone() *xdsState {
	return &xdsState{
		clusters: cloneMap(s.clusters), endpoints: cloneMap(s.endpoints), routes: cloneMap(s.routes),
		listeners: cloneMap(s.listeners), versions: cloneMap(s.versions),
	}
}

// put decodes one resource of type typ into s.
func (s *xdsState) put(typ string, a *anypb.Any) error {
	var msg proto.Message
	switch typ {
	case resource.ClusterType:
		msg = &clusterv3.Cluster{}
	case resource.EndpointType:
		msg = &endpointv3.ClusterLoadAssignment{}
	case resource.RouteType:
		msg = &routev3.RouteConfiguration{}
	case resource.ListenerType:
		msg = &listenerv3.Listener{}
	default:
		return fmt.Errorf("unexpected type %s", typ)
	}
	if err := a.UnmarshalTo(msg); err != nil {
		return err
	}
	switch m := msg.(type) {
	case *clusterv3.Cluster:
		s.clusters[m.Name] = m
	case *endpointv3.ClusterLoadAssignment:
		s.endpoints[m.ClusterName] = m
	case *routev3.RouteConfiguration:
		s.routes[m.Name] = m
	case *listenerv3.Listener:
		s.listeners[m.Name] = m
	}
	return nil
}

func (s *xdsState) reset(typ string) {
	switch typ {
	case resource.ClusterType:
		s.clusters = map[string]*clusterv3.Cluster{}
	case resource.EndpointType:
		s.endpoints = map[string]*endpointv3.ClusterLoadAssignment{}
	case resource.RouteType:
		s.routes = map[string]*routev3.RouteConfiguration{}
	case resource.ListenerType:
		s.listeners = map[string]*listenerv3.Listener{}
	}
}

func (s *xdsState) remove(typ, name string) {
	switch typ {
	case resource.ClusterType:
		delete(s.clusters, name)
	case resource.EndpointType:
		delete(s.endpoints, name)
	case resource.RouteType:
		delete(s.routes, name)
	case resource.ListenerType:
		delete(s.listeners, name)
	}
}

// edsNames and rdsNames are what Envoy subscribes to after CDS and LDS.
func (s *xdsState) edsNames() []string {
	var out []string
	for _, c := range s.clusters {
		if c.GetType() == clusterv3.Cluster_EDS {
			name := c.GetEdsClusterConfig().GetServiceName()
			if name == "" {
				name = c.Name
			}
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (s *xdsState) rdsNames() ([]string, error) {
	var out []string
	for _, l := range s.listeners {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				var hcm hcmv3.HttpConnectionManager
				if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
					return nil, err
				}
				if n := hcm.GetRds().GetRouteConfigName(); n != "" {
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// client is an ADS client behaving as Envoy does: wildcard CDS and LDS,
// then EDS and RDS for exactly the names those return, ACKing every
// response. It uses only go-control-plane's generated gRPC client.
type client struct {
	mu      sync.Mutex
	cur     *xdsState     // guarded by mu
	err     error         // guarded by mu; why the stream ended
	changed chan struct{} // guarded by mu; closed on every new state
	// versionsSeen lists, per type, the versions of the responses in order.
	versionsSeen map[string][]string // guarded by mu
}

func newClient() *client {
	return &client{cur: newState(), changed: make(chan struct{}), versionsSeen: map[string][]string{}}
}

func (c *client) publish(st *xdsState, typ, version string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st != nil {
		c.cur = st
		c.versionsSeen[typ] = append(c.versionsSeen[typ], version)
	}
	if err != nil && c.err == nil {
		c.err = err
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor waits until check accepts the state, and returns that state.
func (c *client) waitFor(ctx context.Context, check func(*xdsState) error) (*xdsState, error) {
	var last error
	for {
		c.mu.Lock()
		st, err, ch := c.cur, c.err, c.changed
		c.mu.Unlock()
		if last = check(st); last == nil {
			return st, nil
		}
		if err != nil {
			return nil, fmt.Errorf("stream ended (%v); last state: %v", err, last)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%v; last state: %v", ctx.Err(), last)
		}
	}
}

// startSotW opens a state-of-the-world ADS stream on conn.
func startSotW(ctx context.Context, t *testing.T, conn *grpc.ClientConn, nodeID string) *client {
	t.Helper()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: nodeID, Cluster: "test"}
	c := newClient()
	subs := map[string][]string{}
	last := map[string][2]string{} // type -> version, nonce
	send := func(typ string) error {
		return stream.Send(&discoveryv3.DiscoveryRequest{
			Node: node, TypeUrl: typ, ResourceNames: subs[typ],
			VersionInfo: last[typ][0], ResponseNonce: last[typ][1],
		})
	}
	if err := send(resource.ClusterType); err != nil {
		t.Fatal(err)
	}
	if err := send(resource.ListenerType); err != nil {
		t.Fatal(err)
	}
	go func() {
		st := newState()
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.publish(nil, "", "", err)
				return
			}
			typ := resp.GetTypeUrl()
			st = st.clone()
			st.reset(typ)
			for _, a := range resp.GetResources() {
				if err := st.put(typ, a); err != nil {
					c.publish(nil, "", "", err)
					return
				}
			}
			st.versions[typ] = resp.GetVersionInfo()
			last[typ] = [2]string{resp.GetVersionInfo(), resp.GetNonce()}
			err = send(typ) // ACK
			switch typ {
			case resource.ClusterType:
				if names := st.edsNames(); err == nil && !slices.Equal(names, subs[resource.EndpointType]) {
					subs[resource.EndpointType] = names
					err = send(resource.EndpointType)
				}
			case resource.ListenerType:
				names, rerr := st.rdsNames()
				if rerr != nil {
					err = rerr
				} else if err == nil && !slices.Equal(names, subs[resource.RouteType]) {
					subs[resource.RouteType] = names
					err = send(resource.RouteType)
				}
			}
			c.publish(st, typ, resp.GetVersionInfo(), err)
			if err != nil {
				return
			}
		}
	}()
	return c
}

// startDelta opens an incremental (delta) ADS stream on conn.
func startDelta(ctx context.Context, t *testing.T, conn *grpc.ClientConn, nodeID string) *client {
	t.Helper()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev3.Node{Id: nodeID, Cluster: "test"}
	c := newClient()
	for _, typ := range []string{resource.ClusterType, resource.ListenerType} {
		if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typ}); err != nil {
			t.Fatal(err)
		}
	}
	subs := map[string][]string{}
	// resubscribe moves the subscription of typ to names, dropping what
	// is no longer named from the state as Envoy does.
	resubscribe := func(st *xdsState, typ string, names []string) error {
		old := map[string]bool{}
		for _, n := range subs[typ] {
			old[n] = true
		}
		var sub []string
		for _, n := range names {
			if !old[n] {
				sub = append(sub, n)
			}
			delete(old, n)
		}
		var unsub []string
		for n := range old {
			unsub = append(unsub, n)
			st.remove(typ, n)
		}
		subs[typ] = names
		if len(sub) == 0 && len(unsub) == 0 {
			return nil
		}
		return stream.Send(&discoveryv3.DeltaDiscoveryRequest{
			Node: node, TypeUrl: typ, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub,
		})
	}
	go func() {
		st := newState()
		for {
			resp, err := stream.Recv()
			if err != nil {
				c.publish(nil, "", "", err)
				return
			}
			typ := resp.GetTypeUrl()
			st = st.clone()
			for _, r := range resp.GetResources() {
				if err := st.put(typ, r.GetResource()); err != nil {
					c.publish(nil, "", "", err)
					return
				}
			}
			for _, n := range resp.GetRemovedResources() {
				st.remove(typ, n)
			}
			st.versions[typ] = resp.GetSystemVersionInfo()
			err = stream.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typ, ResponseNonce: resp.GetNonce()})
			switch typ {
			case resource.ClusterType:
				if err == nil {
					err = resubscribe(st, resource.EndpointType, st.edsNames())
				}
			case resource.ListenerType:
				names, rerr := st.rdsNames()
				if rerr != nil {
					err = rerr
				} else if err == nil {
					err = resubscribe(st, resource.RouteType, names)
				}
			}
			c.publish(st, typ, resp.GetSystemVersionInfo(), err)
			if err != nil {
				return
			}
		}
	}()
	return c
}

// versionsIncrease checks that each type's response versions never go
// down (a type may get the same version twice when its subscription
// changes).
func (c *client) versionsIncrease() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for typ, vs := range c.versionsSeen {
		prev := uint64(0)
		for _, v := range vs {
			if v == "" {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: version %q is not a number", typ, v)
			}
			if n < prev {
				return fmt.Errorf("%s: version went from %d to %d", typ, prev, n)
			}
			prev = n
		}
	}
	return nil
}
