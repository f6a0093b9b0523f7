// Package client is the Go client of spangle's HTTP API (docs/design.md), for
// apps that read from routerd (or from one storaged): Get looks up one
// key, MultiGet many at once through the batch lookup (POST /<db>), and
// Pin makes either answer from a given version.
//
// A key that is not found is not an error: Value.Found is false, or the
// key is in Batch.Missing. Errors wrap one of the package's sentinels
// (ErrNoDB, ErrGone, ErrOverloaded, ErrUnavailable, ErrBadRequest) or
// the context's error, and a *StatusError carries the status and the
// server's message. A request the server sheds (503) is sent again after
// its Retry-After, a bounded number of times and never past the
// context's deadline. Connections are kept alive and reused; a Client is
// safe for concurrent use and meant to be shared.
//
// The client is a Go module of its own, spangle/client, that requires
// nothing: an app that imports it builds none of the server's
// dependencies (ZooKeeper, Envoy, AWS, LevelDB). The few parts of the
// HTTP contract it needs are copied from the server's shared/wire, and
// the server's clienttest package runs this client against the real
// daemons; docs/design.md ("The Go client") says why, and the README
// how an app depends on it. The daemons do not import this package.
package client
