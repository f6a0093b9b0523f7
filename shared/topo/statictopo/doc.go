// Package statictopo is a topo.Watcher over a fixed list of storaged
// nodes, routerd's standalone default: it reads each node's status JSON
// (GET / with Accept: application/json) every period and builds the
// cluster map from what the nodes that answered say they serve. A node
// that does not answer leaves the map, with its replicas, until it
// answers again; the versions it last listed stay in the map without
// replicas, so an outage is not taken for a removal (a db leaves the map
// when the nodes that answer stop listing it).
package statictopo
