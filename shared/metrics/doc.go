// Package metrics is the Prometheus set-up both daemons share: a registry
// of their own, never the process-wide default, with the Go runtime and
// process collectors. Each daemon's daemon package makes one and hands it
// to its server, which registers its series there and serves it on
// /metrics. Series are named spangle_<daemon>_*.
package metrics
