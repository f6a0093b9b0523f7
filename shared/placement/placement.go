package placement

import (
	"fmt"
	"slices"
)

// DefaultReplication is how many nodes hold each partition of a version
// unless configured otherwise, as in sequins: every daemon and package
// that needs the default takes it from here.
const DefaultReplication = 2

// Placement lists, for each partition, the distinct shard ids that should
// hold a copy of it. It is the unit a leader decides and publishes; a
// partition with fewer holders than the replication is under-replicated.
type Placement [][]string

// Strategy decides a Placement. Implementations are deterministic: the
// same shard set (in any order, duplicates ignored), partitions,
// replication and prev give the same result in every process, because
// every node must agree with the leader without talking to it.
//
// prev is the placement in force (nil when there is none); a strategy may
// use it to move as few copies as possible. Every partition gets
// min(replication, number of distinct shards) distinct holders.
type Strategy interface {
	// Name is the value of `[sharding] assignment` that selects it.
	Name() string
	// Place returns the new placement; it never modifies prev.
	Place(shards []string, partitions, replication int, prev Placement) Placement
}

// ByName returns the strategy a cluster config names, so config parsing
// rejects an unknown name before any node starts deciding with it. The
// empty name is the default, sequins.
func ByName(name string) (Strategy, error) {
	switch name {
	case "", "sequins":
		return Sequins{}, nil
	case "rendezvous":
		return Rendezvous{}, nil
	}
	return nil, fmt.Errorf("placement: unknown assignment strategy %q (want sequins or rendezvous)", name)
}

// Held is a strategy's answer for one node: the partitions, ascending,
// that shard id self holds when st places partitions × replication
// copies over shards with no previous placement. A node deciding what to
// load asks this; a nil st is the default, Sequins, whose answer for one
// shard is Assign's.
func Held(st Strategy, self string, shards []string, partitions, replication int) []int {
	if st == nil {
		return Assign(self, shards, partitions, replication)
	}
	var held []int
	for p, hs := range st.Place(shards, partitions, replication, nil) {
		if slices.Contains(hs, self) {
			held = append(held, p)
		}
	}
	return held
}

// Moves counts the copies next adds: for each partition, the holders in
// next that were not holders in prev. It is the number of partition
// copies that must be fetched to go from prev to next, the cost a
// strategy tries to keep small. Copies dropped are free and not counted.
func Moves(prev, next Placement) int {
	moved := 0
	for p, holders := range next {
		var old []string
		if p < len(prev) {
			old = prev[p]
		}
		for _, id := range holders {
			if !contains(old, id) {
				moved++
			}
		}
	}
	return moved
}

// Load counts the copies each shard id holds in p, to check balance and
// the load bound. Shards holding nothing are absent from the map.
func Load(p Placement) map[string]int {
	load := make(map[string]int)
	for _, holders := range p {
		for _, id := range holders {
			load[id]++
		}
	}
	return load
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
