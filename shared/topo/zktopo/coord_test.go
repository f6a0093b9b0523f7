package zktopo_test

import (
	"testing"

	"spangle/shared/topo/topotest"
	"spangle/shared/zktest"
)

// TestCoordination runs the election and fencing suite against a real
// ZooKeeper, each Conn behind its own proxy so that it alone can be cut
// off until its session expires.
func TestCoordination(t *testing.T) {
	topotest.RunCoordination(t, proxiedConns(zktest.Start(t)))
}
