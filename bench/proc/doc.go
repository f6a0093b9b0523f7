// Package proc runs the servers under test as separate processes, so
// that each contender is measured alike: on shared/proctest's
// Supervisor, it starts a command with its output kept in a log file,
// waits until an HTTP check passes, reads the process's peak and current
// memory from /proc, and stops it.
package proc
