// Package health keeps what routerd knows about each storaged node: a
// circuit breaker (sony/gobreaker/v2) that takes a failing node out of
// the pick, the number of requests outstanding to it, and an EWMA of its
// latency. Pick chooses among a partition's replicas by the power of two
// choices on those numbers.
//
// Nothing here touches a socket: callers report each call's outcome, so
// the breaker and picking rules are tested with scripted outcomes.
package health
