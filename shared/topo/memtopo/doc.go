// Package memtopo is an in-memory topo backend for fast unit tests: one
// Server stands for the coordination service, and each Conn made from it
// has its own session, as each storaged would. Faults are injected on the
// Server: the whole service going down (calls return topo.ErrUnavailable,
// maps stay as they were), one Conn losing the service, and one session
// expiring (its ephemeral entries vanish until the Conn publishes them
// again by itself).
//
// Nothing runs in the background: every change, and every Map it causes,
// is done by the time the call that made it returns.
package memtopo
