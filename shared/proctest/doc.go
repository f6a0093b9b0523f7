// Package proctest runs spangle's daemons as real processes in tests: it
// builds a daemon's binary once per test binary (from TestMain), starts
// processes of it on free loopback ports, signals, kills and restarts
// them, and prints the tail of a process's log when its test fails.
//
// It builds the daemon by package path with the go command rather than
// importing it, so shared keeps importing nothing else of spangle's, and
// storaged's and routerd's tests can both run storaged processes.
package proctest
