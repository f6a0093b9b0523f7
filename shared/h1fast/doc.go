// Package h1fast serves key lookups (a plain HTTP/1.1 GET or HEAD of
// /<db>/<key>) on a connection loop of its own, and hands every other
// connection to net/http, with the bytes it already read (issue 31).
//
// Why: net/http allocates a Request, its URL and header maps for every
// request, starts a goroutine per request to watch the connection while
// the handler runs (one more read, two deadline changes and two
// goroutine switches) and formats a Date per answer; a key lookup needs
// none of it. Both daemons answer key lookups through it: routerd
// (routerd/server) and storaged (storaged/server, wired in
// storaged/daemon); each gives only its lookup handler (Options.Lookup)
// and its net/http handler for the rest (Options.Fallback).
//
// With Options.Post, a daemon's batch lookups (POST /<db> with one
// Content-Length within its batch body limit) are served here too: the
// handler reads the body off the connection through Request.Body, under
// a read deadline it sets through http.ResponseController, as on
// net/http (post.go).
//
// What stays net/http's: other POSTs, the status pages, /healthz,
// /metrics, storaged's peer endpoints, HTTP/1.0, other bodies (chunked,
// or on a GET), Expect, Upgrade, odd or oversized heads, and, unless Options.TLS, every TLS connection. The
// first request on a connection that is not a plain key lookup hands the
// connection over for the rest of its life, so what net/http answered
// before still answers. With Options.TLS the handshake is done here
// (bounded by ReadHeaderTimeout, as net/http bounds it); a failed
// handshake or an ALPN protocol other than HTTP/1.1 hands the raw
// *tls.Conn to net/http, which then logs and answers exactly as before,
// and a TLS connection handed over later still shows its TLS state to
// the handler as Request.TLS (so a peer-only endpoint still checks the
// client certificate).
//
// A lookup served here does not see its client leave (net/http's
// per-request watcher is what noticed it): it runs to its own end.
// Shutdown closes idle connections at once and lets a lookup under way
// finish and be answered, as http.Server.Shutdown does.
package h1fast
