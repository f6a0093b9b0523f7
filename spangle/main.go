// Command spangle is the operator's tool for _PIN: it rolls a db back to
// (or freezes it at) a version, rolls it forward again, and shows the
// pins a storaged or a routerd follows. See the README's "Rollback and
// freeze" and the package spangle/spangle/ctl.
//
//	spangle pin    --source <root> <db> <version>
//	spangle unpin  --source <root> <db>
//	spangle status --addr <host:port>
//	spangle zk-acl --zk <host:port> --cluster <name> (ZooKeeper ACL migration)
package main

import (
	"os"

	"spangle/spangle/ctl"
)

func main() {
	os.Exit(ctl.Main(os.Args[1:], os.Stdout, os.Stderr))
}
