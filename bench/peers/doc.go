// Package peers are the servers spangle is measured against, run as their
// own processes like storaged and routerd: a trivial net/http server that
// answers every request with a constant body (the limit of one HTTP hop)
// and a plain httputil.ReverseProxy in front of one storaged (the limit
// of two hops); and, when a binary is given, Stripe's sequins, the system
// spangle replaces, configured here to serve the same files.
package peers
