// Package nodetest is the one handle tests, benchmarks and end-to-end
// runs hold on a running daemon's HTTP port: its status page, its
// /healthz, a key lookup, a series of its /metrics, and waiting until a
// version is ACTIVE on it. It speaks only shared/wire, so it fits a
// storaged or routerd process of an integration test, a container of
// the e2e cluster and a benchmark's server alike. WaitFor is the one
// test-side poll, on shared/wait.Poll.
package nodetest
