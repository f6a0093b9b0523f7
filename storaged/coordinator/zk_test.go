package coordinator_test

import (
	"regexp"
	"testing"

	"spangle/shared/zktest"
)

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// TestScenariosZooKeeper runs the scenarios against a real ZooKeeper,
// each in a cluster of its own on one server.
func TestScenariosZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	runScenarios(t, func(t *testing.T) backend {
		cluster := nonName.ReplaceAllString(t.Name(), "-")
		return backend{newConn: func(t *testing.T) coordConn { return zkSession(t, srv, cluster) }}
	})
}
