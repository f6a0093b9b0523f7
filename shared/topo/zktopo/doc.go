// Package zktopo is the ZooKeeper topo backend (github.com/go-zookeeper/zk)
// with the znode layout of docs/design.md: ephemeral
// nodes/<shard_id>@<addr>, persistent partitions/<db>/<version> holding the
// JSON VersionInfo, ephemeral partitions/<db>/<version>/<partition>@<addr>,
// and persistent pins/<db> holding the leader's JSON topo.Pin.
//
// As in the sequins design it does only two kinds of operation: it
// publishes ephemeral znodes (creating persistent parents as needed), and
// it lists and watches children into a local cache that it publishes as a
// topo.Map. Map never touches the network. Everything a Conn publishes is
// remembered and published again after a reconnect or a session expiry,
// by the backend itself; while ZooKeeper is away, the last map stays in
// force and calls return topo.ErrUnavailable at once.
//
// Watches held by one session: one on nodes/, one on partitions/, one per
// db and one per version (children watches; a data watch only on a
// version whose info is not written yet), one on pins/ (an exists-watch
// until it is created) and a data watch per pinned db. Nothing is watched
// per partition or per replica, so 10 dbs of 64 partitions with one
// version each and no pin cost 23 watches (33 while each db keeps two
// versions), and a node
// owns one ephemeral znode for itself plus one per partition it serves.
// The persistent version znodes would pile up with every version ever
// built; the coordinator's leader deletes those nobody serves any more
// (PruneVersion), and their watches go with them, so what a session
// costs follows the versions that exist.
//
// With Options.Auth (a digest Credential, from [zk] auth_file or
// SPANGLE_ZK_AUTH: LoadCredential) the session authenticates before it
// sends anything else, again on every reconnection, and every znode it
// creates lets only that identity change it (acl.go); a refusal is
// topo.ErrDenied naming the znode. Once authenticated, a Conn checks the
// cluster's znodes and warns once of any open to every client
// (secure.go); SetClusterACL, behind `spangle zk-acl`, closes them
// (migrate.go).
package zktopo
