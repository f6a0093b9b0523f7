// Package fsync makes files and directories durable by name. Both the
// table builder (package table) and the local store's manifest (package
// store) need it, and neither should import the other for it.
package fsync
