// Package certgen makes X.509 certificates with crypto/x509 alone: a CA,
// and server or client certificates with the DNS, IP and URI (SPIFFE)
// names asked for. `spangle certs` and the tests' helper (shared/tlstest)
// both use it, so that demos and tests run on certificates made the same
// way; none is ever committed.
package certgen
