// Package server is routerd's HTTP face; routerd/daemon wires it up.
//
// Server.ServeHTTP is where every request is routed: GET/HEAD
// /<db>/<key> goes through lookup (partmap's served version, then the
// cache, then proxy's hedged fan-out to the key's partition replicas);
// "/", "/<db>", /healthz and /metrics are answered locally.
package server
