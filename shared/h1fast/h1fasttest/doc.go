// Package h1fasttest holds what the tests of h1fast's fast path share,
// in h1fast itself and in the daemons that serve on it: RawConn, a
// client connection that writes requests byte for byte (so a test
// controls pipelining, split heads and odd headers) and reads answers
// with net/http's parser, and SameAnswer and SameHeaders, which check
// that the fast path answered a request as net/http did.
//
// It imports only the standard library, so that shared stays free of the
// daemons and every test can use it.
package h1fasttest
