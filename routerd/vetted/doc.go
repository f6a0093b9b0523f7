// Package vetted keeps the storaged nodes routerd has not verified out
// of the cluster map it serves from. A node that registers in ZooKeeper
// (which takes only the ZooKeeper credential) counts towards a version
// being complete, and is sent lookups, only once one TLS handshake with
// it has shown a certificate valid for the address it registered, or
// carrying an identity of peer_names. Without this a node with a
// certificate of another CA could make routerd switch to a version whose
// only published replica of some partition is that node, and every
// lookup of that partition would fail until it left.
//
// Watcher wraps the discovery Watcher: its maps hold only verified nodes,
// in Nodes and in every partition's replicas; dbs no unverified node
// serves are shared with the inner map, untouched. A node is checked when
// it first appears, again after a failed check (sooner for an
// unreachable node than for a refused certificate), and forgotten ten
// minutes after no map names it (a node that registers again in a new
// ZooKeeper session keeps its verification meanwhile).
package vetted
