// Package server is routerd's HTTP face; routerd/daemon wires it up.
//
// Server.ServeHTTP is where every request is routed: GET/HEAD
// /<db>/<key> goes through lookup (partmap's served version, then the
// cache, then proxy's hedged fan-out to the key's partition replicas);
// POST /<db>, the batch lookup (batch.go), does the same for many keys
// at once, one proxy call per partition; "/", "/<db>", /healthz and
// /metrics are answered locally. Serve answers a plain HTTP/1.1 key
// GET or HEAD, and a batch POST with a Content-Length, on shared/h1fast's
// connection loop, through the same lookup and serveBatch, and hands
// everything else to ServeHTTP on net/http.
package server
