// Package client is the Go client of spangle's HTTP API (DESIGN.md), for
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
// The daemons do not import this package.
package client
