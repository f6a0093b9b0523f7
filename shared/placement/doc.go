// Package placement decides which shard ids should hold which partition
// copies of a version: it is the one home of "who holds which
// partition". (Which partition a key is in is shared/partitioner's.)
//
// A Strategy turns the live shard ids, the number of partitions and the
// replication into a Placement, given the previous Placement so that a
// strategy can keep most copies where they already are. Two strategies
// exist: Sequins, the seed's round-robin deal (the default, which moves
// almost everything when the shard set changes; Assign and Holders are
// its rule for one shard and for all), and Rendezvous,
// highest-random-weight hashing with a load bound, which moves close to
// the minimum on a join or a leave and keeps every shard under
// ceil(1.1 × mean) copies. Held is a strategy's answer for one node.
//
// A storaged node decides what it holds in storaged/membership (the
// Controller's holdings): the coordinator's assignment when one covers
// the version, else Held under the configured strategy less what the
// max_replication filter drops. The coordinator's leader
// (storaged/coordinator) plans its assignments with the moves from here
// (repair.go): Repair gives a gone shard's copies to live ones, Rebalance
// gives a joiner its share, Trim drops surplus copies, Gone and Idle name
// the shards they act on.
//
// Everything here is pure: no sockets, no clocks, no randomness, so every
// node and the leader compute the same answer from the same inputs, and
// Simulate can measure movement and balance in a test.
package placement
