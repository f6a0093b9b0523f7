// Package snapshot turns spangle's partition map and the version served
// for each db into one consistent set of Envoy xDS resources (clusters,
// endpoints, routes and a listener carrying the Lua partition filter),
// ready for go-control-plane's snapshot cache.
//
// It is pure: no sockets, no clock, no goroutines, so every rule about
// what Envoy gets can be tested by building a snapshot from a Map.
package snapshot
