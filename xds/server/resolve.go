package server

import (
	"context"
	"net"
	"sort"
	"sync"

	"go.uber.org/zap"

	"spangle/shared/topo"
)

// resolver turns storaged host names into IP addresses, because Envoy
// takes only IPs from EDS while nodes may register names (as in the
// compose cluster). It keeps the last good answer for each host, so that
// a DNS hiccup never drops a live replica. It is safe for concurrent use.
type resolver struct {
	lookup func(ctx context.Context, host string) ([]string, error)
	log    *zap.Logger

	mu    sync.Mutex
	known map[string]string // guarded by mu; host -> IP
}

func newResolver(lookup func(ctx context.Context, host string) ([]string, error), log *zap.Logger) *resolver {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	return &resolver{lookup: lookup, log: log, known: map[string]string{}}
}

// hosts lists the non-IP hosts of the replicas of the served versions.
func hosts(m *topo.Map, served map[string]string) []string {
	seen := map[string]bool{}
	for db, version := range served {
		v := m.Version(db, version)
		if v == nil {
			continue
		}
		for _, reps := range v.Replicas {
			for _, addr := range reps {
				h, _, err := net.SplitHostPort(addr)
				if err == nil && net.ParseIP(h) == nil {
					seen[h] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// resolve looks up hosts (all of them when refresh, else only those never
// resolved) in parallel until ctx ends, and returns what is known of each.
func (r *resolver) resolve(ctx context.Context, hosts []string, refresh bool) map[string]string {
	var wg sync.WaitGroup
	for _, h := range hosts {
		r.mu.Lock()
		_, ok := r.known[h]
		r.mu.Unlock()
		if ok && !refresh {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			addrs, err := r.lookup(ctx, h)
			if err != nil || len(addrs) == 0 {
				r.log.Warn("xds: cannot resolve storaged host", zap.String("host", h), zap.Error(err))
				return
			}
			sort.Strings(addrs)
			r.mu.Lock()
			r.known[h] = addrs[0]
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(hosts))
	for _, h := range hosts {
		if ip, ok := r.known[h]; ok {
			out[h] = ip
		}
	}
	return out
}
