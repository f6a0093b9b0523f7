// Package debugserver builds the opt-in debug listener both daemons run
// on their [debug] bind address, as sequins did: Go's profiler under
// /debug/pprof/ and expvar's JSON under /debug/vars. It is a separate
// listener so that an operator can keep it on loopback or a management
// network, never on the lookup port.
//
// The handlers come from net/http/pprof and expvar. Importing
// net/http/pprof registers them on http.DefaultServeMux as well; spangle
// never serves that mux, so the registration is inert. /debug/vars lists
// expvar's process-wide variables (cmdline, memstats) and the daemon's
// own, passed in Options rather than published globally, so that several
// daemons can share a process.
package debugserver
