package snapshot

import (
	"fmt"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"spangle/shared/wire"
	"spangle/xds/luafilter"
)

// RetryOn is when Envoy tries another replica, as routerd does: server
// errors, resets, refused connections and RetriableStatusCodes.
const RetryOn = "5xx,reset,connect-failure,retriable-status-codes"

// routeConfig routes, for each served db, each partition that has
// endpoints to its cluster by the headers the Lua filter sets, then the db's other requests to
// routerd, then everything else (status pages, dbs Envoy does not route)
// to routerd too.
func routeConfig(dbs []Served, endpoints map[string]int, o Options) (*routev3.RouteConfiguration, error) {
	routerd := RouterdClusterName(o.Name)
	previousHosts, err := anypb.New(&previoushostsv3.PreviousHostsPredicate{})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var routes []*routev3.Route
	for _, s := range dbs {
		prefix := "/" + s.DB + "/"
		for p := 0; p < s.NumPartitions; p++ {
			replicas := endpoints[ClusterName(o.Name, s.DB, s.Version, p)]
			if replicas == 0 {
				// Nobody Envoy can reach serves it: routerd answers, with
				// the status the HTTP contract gives (502) rather than
				// Envoy's 503 if it cannot either.
				continue
			}
			routes = append(routes, partitionRoute(s, p, replicas, prefix, previousHosts, o))
		}
		routes = append(routes, &routev3.Route{
			Name:   s.DB + "/routerd",
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
			Action: clusterAction(routerd),
		})
	}
	routes = append(routes, batchRoute(routerd, o), &routev3.Route{
		Name:   "routerd",
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: clusterAction(routerd),
	})
	return &routev3.RouteConfiguration{
		Name: o.Name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    o.Name,
			Domains: []string{"*"},
			Routes:  routes,
		}},
		// Routes are rebuilt on every change; a stale cluster reference
		// must fail loudly in Envoy rather than silently 404.
		ValidateClusters: wrapperspb.Bool(true),
	}, nil
}

func clusterAction(cluster string) *routev3.Route_Route {
	return &routev3.Route_Route{Route: &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
	}}
}

// batchRoute sends a batch lookup (POST /<db>; no partition route takes
// it, their prefix being "/<db>/") to routerd with the bound routerd
// gives a batch, not a lookup's ProxyTimeout nor Envoy's default of 15
// s: routerd waits for a batch's keys up to max(BatchTimeout,
// ProxyTimeout) after its body is read (within that, a deadline of
// ProxyTimeout plus batch_key_timeout a key, past which it waits only on
// replicas that keep answering), then answers each key, the ones it
// gave up on failed with 504. Envoy cannot count the keys, so the route
// takes that outer bound, plus ProxyTimeout for routerd to write its
// answer: Envoy never cuts off an answer routerd is about to give. Like
// routerd's, Envoy's route timeout starts once the request body is in.
func batchRoute(routerd string, o Options) *routev3.Route {
	return &routev3.Route{
		Name: "batch",
		Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
			Headers:       []*routev3.HeaderMatcher{exactHeader(":method", "POST")},
		},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: routerd},
			Timeout:          durationpb.New(BatchRouteTimeout(o)),
		}},
	}
}

// BatchRouteTimeout is the timeout of the batch route: max(BatchTimeout,
// ProxyTimeout) + ProxyTimeout, of o with its defaults.
func BatchRouteTimeout(o Options) time.Duration {
	o = o.withDefaults()
	return max(o.BatchTimeout, o.ProxyTimeout) + o.ProxyTimeout
}

// partitionRoute sends one partition's keys to its replicas, pinned to
// the served version, with routerd's timeouts: each replica gets
// ProxyStageTimeout before Envoy hedges to another one (without
// cancelling the first), and the whole lookup gets ProxyTimeout.
func partitionRoute(s Served, p, replicas int, prefix string, previousHosts *anypb.Any, o Options) *routev3.Route {
	action := &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: ClusterName(o.Name, s.DB, s.Version, p)},
		Timeout:          durationpb.New(o.ProxyTimeout),
		RetryPolicy: &routev3.RetryPolicy{
			RetryOn:              RetryOn,
			NumRetries:           wrapperspb.UInt32(uint32(replicas - 1)),
			PerTryTimeout:        durationpb.New(o.ProxyStageTimeout),
			RetriableStatusCodes: RetriableStatusCodes,
			// Each try goes to a replica not tried yet, as routerd's
			// hedged requests do.
			RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
				Name:       "envoy.retry_host_predicates.previous_hosts",
				ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: previousHosts},
			}},
			HostSelectionRetryMaxAttempts: 3,
		},
		HedgePolicy: &routev3.HedgePolicy{HedgeOnPerTryTimeout: true},
	}
	return &routev3.Route{
		Name: s.DB + "/" + strconv.Itoa(p),
		Match: &routev3.RouteMatch{
			PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix},
			Headers: []*routev3.HeaderMatcher{
				exactHeader(luafilter.HeaderPartition, strconv.Itoa(p)),
				exactHeader(luafilter.HeaderPartitionVersion, s.Version),
			},
		},
		Action: &routev3.Route_Route{Route: action},
		RequestHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: wire.HeaderVersion, Value: s.Version},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	}
}

func exactHeader(name, value string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{
		Name: name,
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: value},
		}},
	}
}

// routeClusters lists the clusters a route configuration sends to.
func routeClusters(res types.Resource) []string {
	rc, ok := res.(*routev3.RouteConfiguration)
	if !ok {
		return nil
	}
	var out []string
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if c := r.GetRoute().GetCluster(); c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}
