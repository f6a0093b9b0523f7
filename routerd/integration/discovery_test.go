package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// pollNodes is a stopgap static discovery for these tests until
// shared/topo/statictopo lands: it reads each storaged's status JSON
// every 50ms and publishes the map they make together.
func pollNodes(t testing.TB, nodes ...*storaged) topo.Watcher {
	mir := topo.NewMirror()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	poll := func() {
		var b topo.Builder
		for _, n := range nodes {
			req, _ := http.NewRequestWithContext(ctx, "GET", n.url()+"/", nil)
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			var st wire.NodeStatus
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				continue
			}
			b.AddNode(topo.Node{ID: st.Node.ID, ShardID: n.addr, Addr: n.addr, Started: st.Node.Started})
			for db, ds := range st.DBs {
				for v, vs := range ds.Versions {
					if vs.State == wire.StateError || vs.NumPartitions <= 0 {
						continue
					}
					b.AddVersion(db, v, topo.VersionInfo{NumPartitions: vs.NumPartitions, Created: vs.Created})
					for _, p := range vs.Partitions {
						b.AddReplica(db, v, p, n.addr)
					}
				}
			}
		}
		mir.Publish(b.Build(0))
	}
	poll()
	go func() {
		defer close(done)
		defer client.CloseIdleConnections()
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				poll()
			}
		}
	}()
	return mir
}
