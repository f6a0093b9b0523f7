// Package proctest supervises the external processes of tests and
// benchmarks: spangle's daemons, ZooKeeper (zktest) and versitygw
// (s3test) all run under its Supervisor, which starts a process with its
// output appended to a log, waits until it is ready, signals, stops,
// kills, restarts and reaps it, and shows the log's tail. Process is the
// Supervisor for a test: it builds a daemon's binary once per test
// binary (from TestMain), starts it on a free loopback port, stops it at
// the test's end and prints its log when the test fails.
//
// It builds the daemon by package path with the go command rather than
// importing it, so shared keeps importing nothing else of spangle's, and
// storaged's and routerd's tests can both run storaged processes.
package proctest
