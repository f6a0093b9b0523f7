// Package server is spangle's Envoy control plane as routerd embeds it: it
// watches the partition map, rebuilds the xDS resources (package
// snapshot) whenever the map or a served version changes, and serves them
// to every Envoy over gRPC's aggregated discovery service, in both the
// state-of-the-world and the delta protocol.
//
// Every Envoy gets the same configuration, whatever its node id: the
// routes depend only on the cluster, not on where the Envoy runs.
package server
