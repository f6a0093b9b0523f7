// Package tlstest makes the certificates of a test in t.TempDir with
// shared/certgen, the code behind `spangle certs`: a CA, a peer
// certificate for 127.0.0.1 and localhost, a client certificate, and on
// demand bad ones (expired, not yet valid, from another CA, for another
// name, a key that does not match, a truncated PEM).
package tlstest
