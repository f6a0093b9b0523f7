// Package topo is spangle's view of the cluster: which storaged nodes are
// alive, which versions of which databases exist, and which node holds
// which partition of each version.
//
// The coordination service sits behind one small interface, Conn, used by
// storaged to publish itself and its partitions, and its read-only subset
// Watcher, used by routerd. Backends live in their own packages (zktopo
// for ZooKeeper, memtopo in memory for tests, statictopo for a fixed list
// of storaged nodes) and pass the one suite in topotest.
//
// As in the sequins design, only two kinds of operation exist: publishing
// ephemeral entries and mirroring lists of children into a local cache.
// Every read is served from that cache (a Map), which may be stale; no
// request path ever waits on the coordination service.
//
// The coordinator adds a third, kept apart in Coordination: a leader
// election (ephemeral sequential entries) and decisions committed
// atomically, fenced by the leadership, the node list they were made
// from and the previous decision, and the deletion of versions nobody
// serves any more, so that the persistent entries do not pile up with
// every version ever built. Nothing on the request path uses it.
package topo
