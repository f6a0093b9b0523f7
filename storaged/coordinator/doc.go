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
package coordinator
