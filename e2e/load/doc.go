// Package load runs readers against routerd the way an application does
// and records every answer: status, X-Sequins-Version, the node that
// answered, latency and whether the value was the right one, so a
// scenario can count failed reads and version regressions.
package load
