package memtopo_test

import (
	"testing"

	"spangle/shared/topo/memtopo"
	"spangle/shared/topo/topotest"
)

func TestCoordination(t *testing.T) {
	topotest.RunCoordination(t, backend(memtopo.NewServer()))
}
