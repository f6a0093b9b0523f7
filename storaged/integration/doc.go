// Package integration tests storaged's cluster mode end to end: real
// storaged processes registering in a real ZooKeeper server (started by
// shared/zktest), on generated datasets, through ZooKeeper outages and
// node deaths. It holds only tests and benchmarks.
package integration
