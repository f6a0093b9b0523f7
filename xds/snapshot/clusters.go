package snapshot

import (
	"fmt"
	"net"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// adsSource tells Envoy to fetch a resource over the ADS stream it
// already has with us.
func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// partitionCluster is the cluster of one partition's replicas. Its
// endpoints come by EDS so that a replica joining or dying changes only
// one small ClusterLoadAssignment, not the cluster (which Envoy would
// drain and rebuild).
func partitionCluster(name string, o Options) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
		ConnectTimeout:       durationpb.New(o.ConnectTimeout),
		// Least request suits hedging: a slow replica has requests
		// outstanding and gets fewer new ones.
		LbPolicy: clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: &clusterv3.CircuitBreakers{
			Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
				Priority:           corev3.RoutingPriority_DEFAULT,
				MaxConnections:     wrapperspb.UInt32(o.MaxConnections),
				MaxPendingRequests: wrapperspb.UInt32(o.MaxPendingRequests),
				MaxRequests:        wrapperspb.UInt32(o.MaxRequests),
				MaxRetries:         wrapperspb.UInt32(o.MaxRetries),
			}},
		},
		OutlierDetection: &clusterv3.OutlierDetection{
			// Without split_external_local_origin_errors, connect
			// failures and resets count as 5xx, so a dead storaged is
			// ejected as soon as a bad one.
			Consecutive_5Xx:                    wrapperspb.UInt32(o.Consecutive5xx),
			EnforcingConsecutive_5Xx:           wrapperspb.UInt32(100),
			ConsecutiveGatewayFailure:          wrapperspb.UInt32(o.Consecutive5xx),
			EnforcingConsecutiveGatewayFailure: wrapperspb.UInt32(100),
			Interval:                           durationpb.New(o.OutlierInterval),
			BaseEjectionTime:                   durationpb.New(o.BaseEjectionTime),
			MaxEjectionPercent:                 wrapperspb.UInt32(o.MaxEjectionPercent),
		},
	}
}

// loadAssignment lists the replicas of a partition as the endpoints of
// its cluster. It returns the addresses it had to leave out.
func loadAssignment(name string, replicas []string, resolved map[string]string) (*endpointv3.ClusterLoadAssignment, []string) {
	var lbs []*endpointv3.LbEndpoint
	var unresolved []string
	for _, addr := range replicas {
		host, port, err := splitAddr(addr)
		if err != nil {
			unresolved = append(unresolved, addr)
			continue
		}
		ip := host
		if net.ParseIP(host) == nil {
			ip = resolved[host]
			if net.ParseIP(ip) == nil {
				unresolved = append(unresolved, addr)
				continue
			}
		}
		lbs = append(lbs, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: socketAddress(ip, port),
				// The registered address, for Envoy's stats and logs.
				Hostname: addr,
			}},
		})
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	if len(lbs) > 0 {
		cla.Endpoints = []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}}
	}
	return cla, unresolved
}

// routerdCluster reaches routerd itself. Its one address comes inline: an
// IP makes it STATIC, a host name STRICT_DNS (Envoy resolves it).
func routerdCluster(o Options) (*clusterv3.Cluster, error) {
	host, port, err := splitAddr(o.RouterdAddr)
	if err != nil {
		return nil, fmt.Errorf("snapshot: routerd address: %w", err)
	}
	typ := clusterv3.Cluster_STATIC
	if net.ParseIP(host) == nil {
		typ = clusterv3.Cluster_STRICT_DNS
	}
	name := RouterdClusterName(o.Name)
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: typ},
		ConnectTimeout:       durationpb.New(o.ConnectTimeout),
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress(host, port),
				}},
			}}}},
		},
	}, nil
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      corev3.SocketAddress_TCP,
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func splitAddr(addr string) (string, uint32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("bad host:port %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 || host == "" {
		return "", 0, fmt.Errorf("bad host:port %q", addr)
	}
	return host, uint32(port), nil
}
