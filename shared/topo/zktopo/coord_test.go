package zktopo_test

import (
	"testing"

	"spangle/shared/topo/topotest"
	"spangle/shared/topo/zktopo"
	"spangle/shared/zktest"
)

// TestCoordination runs the election and fencing suite against a real
// ZooKeeper, each Conn behind its own proxy so that it alone can be cut
// off until its session expires.
func TestCoordination(t *testing.T) {
	topotest.RunCoordination(t, proxiedConns(zktest.Start(t)))
}

// TestCoordinationWithAuth runs it with the cluster's credential and
// acl_read auth: elections, commits, pins and pruning work under the
// ACLs.
func TestCoordinationWithAuth(t *testing.T) {
	topotest.RunCoordination(t, proxiedConnsWith(zktest.Start(t),
		zktopo.Options{Auth: credential(t, clusterCred), ReadACL: zktopo.ReadAuth}))
}
