// Package daemon wires a standalone storaged together from its Config:
// source, local store, version manager, HTTP server and metrics registry.
// main only parses flags and signals; tests start a whole node in-process
// with Start.
package daemon
