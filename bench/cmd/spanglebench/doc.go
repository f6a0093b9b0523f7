// Command spanglebench is `make bench`: it measures spangle against the
// limits of this machine and prints one table (see spangle/bench/suite).
//
//	spanglebench [-quick] [-out bench/results.json] [flags]
//
// It also runs the peers it measures against, as their own processes:
//
//	spanglebench serve-trivial --bind ADDR [--body-size N]
//	spanglebench serve-proxy --bind ADDR --target http://host:port
//
// With -sequins PATH (or $SPANGLE_BENCH_SEQUINS) it also runs that sequins
// binary beside storaged on the same files (scripts/build-sequins.sh
// builds one; bench/README.md, "sequins side by side").
package main
