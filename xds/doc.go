// Package xds holds spangle's Envoy control plane: routerd, started with
// --xds-bind, serves Envoy's aggregated discovery service (ADS) from the
// same partition map it routes with, so that Envoy sidecars send key
// lookups straight to the storaged replicas of the key's partition.
//
// The work is split along its purposes:
//
//   - luafilter writes the Lua script Envoy runs to compute a key's
//     partition, since Envoy cannot compute Java's hashCode by itself;
//   - snapshot turns a partition map and the served versions into one
//     consistent set of xDS resources, without any network;
//   - server watches the map, rebuilds and publishes snapshots, and serves
//     them over gRPC.
//
// See README.md for the resources generated and for the Envoy bootstrap.
package xds
