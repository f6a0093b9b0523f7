package coordinator_test

import (
	"testing"

	"spangle/shared/topo/memtopo"
)

func TestScenariosMemtopo(t *testing.T) {
	runScenarios(t, func(*testing.T) backend {
		s := memtopo.NewServer()
		return backend{newConn: func(t *testing.T) coordConn {
			c := s.Conn()
			t.Cleanup(func() { c.Close() })
			return c
		}}
	})
}
