// Package wire is the HTTP contract that storaged and routerd both speak:
// header names (sequins' own, so sequins clients work unchanged), the
// status codes the daemons exchange and how a bad path maps to one, how
// a request path splits into a db and a key, the version states, and the
// JSON shapes of the status and health pages.
package wire
