// Package daemon wires a storaged together from its Config: source, local
// store, version manager, HTTP server, metrics registry and, in cluster
// mode, the ZooKeeper connection and the cluster controller. main only
// parses flags and signals; tests start a whole node in-process with
// Start.
package daemon
