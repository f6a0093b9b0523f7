// Package integration holds routerd's tests against real storaged
// processes (built from ./storaged in TestMain) and a real ZooKeeper
// (shared/zktest): failover, hedging, load shedding, version switches,
// the cache, the status page in Chromium, and the benchmarks against
// httputil.ReverseProxy and a trivial net/http server.
//
// It has no code outside its tests.
package integration
