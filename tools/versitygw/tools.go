//go:build tools

// Package tools pins versitygw, the S3 server spangle's tests and e2e cluster
// run, in a module of its own so that spangle's go.mod stays free of it.
// scripts/deps.sh builds it with `go build` from this directory.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
