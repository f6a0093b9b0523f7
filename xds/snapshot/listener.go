package snapshot

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/wellknown"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// listener is where Envoy takes lookups: an HTTP connection manager whose
// routes come by RDS, and whose filters are the Lua partition filter,
// which sets the header the routes match, then the router.
//
// The script rides in the listener, so a db switching version changes
// the listener. Envoy drains the connections of the old filter chain
// gracefully, and they keep the old script while they last; the routes
// also match the version the script computed for (see
// luafilter.HeaderPartitionVersion), so their lookups go to routerd
// rather than to the wrong partition.
func listener(script string, o Options) (*listenerv3.Listener, error) {
	lua, err := anypb.New(&luav3.Lua{
		DefaultSourceCode: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: script}},
		StatPrefix:        o.Name,
		// The routes match a header the script sets: Envoy must pick
		// the route after the script, not before.
		ClearRouteCache: wrapperspb.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: lua filter: %w", err)
	}
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, fmt.Errorf("snapshot: router filter: %w", err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: o.Name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: o.Name,
		}},
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: wellknown.Lua, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: lua}},
			{Name: wellknown.Router, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: http connection manager: %w", err)
	}
	return &listenerv3.Listener{
		Name:    o.Name,
		Address: socketAddress(o.ListenerAddress, o.ListenerPort),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{
				Name:       wellknown.HTTPConnectionManager,
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
			}},
		}},
	}, nil
}
