package zktopo

import (
	"fmt"
	"net"
	"sync"
)

// hosts is a zk.HostProvider that resolves nothing at start: the dialer
// resolves a name at each attempt. The client's default provider resolves
// every name once, in Connect, so a ZooKeeper host whose name does not
// resolve yet (a container still starting) would make Open fail instead
// of waiting for it like any other outage.
type hosts struct {
	mu      sync.Mutex
	servers []string // guarded by mu
	cur     int      // guarded by mu; index of the last server returned
	last    int      // guarded by mu; index of the last server connected to
}

// Init implements zk.HostProvider.
func (h *hosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("zktopo: server %q: %w", s, err)
		}
	}
	if len(servers) == 0 {
		return fmt.Errorf("zktopo: no ZooKeeper servers")
	}
	h.servers = append([]string(nil), servers...)
	h.cur, h.last = -1, -1
	return nil
}

// Len implements zk.HostProvider.
func (h *hosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next implements zk.HostProvider: round robin; retryStart once every
// server has been tried since the last successful connection.
func (h *hosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = (h.cur + 1) % len(h.servers)
	retryStart = h.cur == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.cur], retryStart
}

// Connected implements zk.HostProvider.
func (h *hosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.cur
}
