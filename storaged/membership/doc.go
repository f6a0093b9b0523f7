// Package membership makes a storaged one member of a cluster: it registers
// the node in the coordination service, decides which partitions of each
// version the node holds (once the node list has been stable for a
// while), publishes each partition once it is servable, and switches
// clients to a version once the cluster map says every partition has
// enough live replicas. When a db leaves the source, the node deletes
// its entries from the coordination service once no node publishes it
// (hooks.go, dbRemoved), so that routers answer 404 for it, not 502.
//
// Which partitions a node holds is decided in one function,
// Controller.holdings (holdings.go): the coordinator's assignment when
// one covers the version (storaged/coordinator.AssignedTo, read through
// Options.Assigned), taken whole; otherwise the strategy's answer
// (shared/placement.Held: the seed's round-robin over the sorted
// distinct shard ids by default, or rendezvous), less the partitions
// that already have max_replication live replicas on other nodes.
//
// It steers the version manager through versions.Hooks and sees the
// cluster only through topo.Conn, so the same code runs against ZooKeeper
// and, in unit tests, the in-memory backend. Nothing here is on the
// request path: requests read the manager's snapshot, never the
// coordination service.
package membership
