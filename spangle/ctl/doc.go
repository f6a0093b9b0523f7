// Package ctl is the operator's side of _PIN, behind the spangle
// command: it writes and deletes a db's marker in a local source root
// (an object store's marker is written with its own tools, see the
// README), and reads the pins in force from a storaged's or a routerd's
// JSON status. It imports only shared, so it stays a small client.
package ctl
