// Command spanglebench is `make bench`: it measures spangle against the
// limits of this machine and prints one table (see spangle/bench/suite).
//
//	spanglebench [-quick] [-out bench/results.json] [flags]
//
// It also runs the peers it measures against, as their own processes:
//
//	spanglebench serve-trivial --bind ADDR [--body-size N]
//	spanglebench serve-proxy --bind ADDR --target http://host:port
package main
