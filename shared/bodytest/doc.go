// Package bodytest plays a slow or stalled client against a real HTTP
// server, for the tests of both daemons' batch lookups: Probe tells when
// a handler has read a given number of body bytes and waits for more,
// and Client writes a request head and part of its body over a raw
// connection, then reads the answer whenever the test wants it. The
// Check functions are the body checks both daemons pass (a stalled body
// answered 408, the bytes held bounded, a bad path refused as a GET).
package bodytest
