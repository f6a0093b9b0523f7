// Package daemon wires a routerd together from its config.Config:
// discovery (ZooKeeper, or the static storaged list), the metrics
// registry, the HTTP server of routerd/server and, with xds_bind, the
// embedded xDS server. main only parses flags and signals; tests start a
// whole routerd in-process with Start.
package daemon
