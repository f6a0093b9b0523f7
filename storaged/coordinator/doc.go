// Package coordinator repairs and rebalances the cluster: one storaged,
// elected through the coordination service (ephemeral sequential
// entries, each candidate watching its predecessor), re-replicates the
// copies of nodes gone for rereplicate_after and, with the rendezvous
// strategy, gives a joining node its share. It writes its decisions as
// assignments (assignments/<db>/<version>), committed only while its
// leadership, the node list it decided from and the previous decision
// all still hold, after a quorum of nodes answered ELECT on the same
// ring version (seed 004). Followers fetch what an assignment gives
// them and drop what it takes away only once the new holders serve it.
//
// The leader also deletes the persistent entries of versions nobody
// needs any more, which would otherwise pile up with every version ever
// built: a version older than a complete one of its db, that no node
// has served for prune_after, goes with its assignment. The service
// itself refuses the delete while any replica is published, and a node
// that serves the version again later creates its entry again.
//
// What is here, by file: the leader, which only the elected node runs
// (coordinator.go: election and Run; leader.go: each round's plan and
// commit; elect.go: the ELECT quorum, server side and client side;
// prune.go; pin.go: the pins it publishes; status.go); the Follower,
// which every node runs to carry out the assignments that concern it
// (follow.go, with AssignedTo, which storaged/membership reads); and what an
// assignment means once published (assignment.go: which holders are
// settled, which stay in force, what is pending). The moves from one
// placement to the next are pure arithmetic and live in shared/placement.
// storaged/membership, not this package, is a node's own membership.
package coordinator
