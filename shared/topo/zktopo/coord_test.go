package zktopo_test

import (
	"sync"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/zktest"
)

// TestCoordination runs the election and fencing suite against a real
// ZooKeeper, each Conn behind its own proxy so that it alone can be cut
// off until its session expires.
func TestCoordination(t *testing.T) {
	srv := zktest.Start(t)
	var mu sync.Mutex
	proxies := map[topo.Conn]*zktest.Proxy{}
	proxy := func(c topo.Conn) *zktest.Proxy {
		mu.Lock()
		defer mu.Unlock()
		return proxies[c]
	}
	topotest.RunCoordination(t, topotest.Backend{
		NewConn: func(t *testing.T) topo.Conn {
			p := srv.Proxy(t)
			c := open(t, p.Addr())
			mu.Lock()
			proxies[c] = p
			mu.Unlock()
			return c
		},
		Cut:  func(_ *testing.T, c topo.Conn) { proxy(c).Cut() },
		Heal: func(_ *testing.T, c topo.Conn) { proxy(c).Heal() },
	})
}
