// Package server is storaged's HTTP API (docs/design.md): where a request
// is served. GET and HEAD /<db>/<key> answer from the version manager's
// active or pinned version, and POST /<db> is the batch lookup of many
// keys from one version (batch.go, format in package wire); / and /<db>
// are the status page (HTML, or JSON with Accept: application/json);
// /healthz reports every version's state; /metrics is Prometheus, from a
// registry of the server's own. The daemon serves a plain HTTP/1.1 key
// GET or HEAD through ServeKey, and a batch POST with a Content-Length
// through ServeBatch, on shared/h1fast's connection loop, and everything
// else through ServeHTTP on net/http; both answer with the same serveKey
// and serveBatch.
//
// The key lookup path takes no lock and allocates little: headers are set
// by direct assignment of slices computed once per version.
package server
