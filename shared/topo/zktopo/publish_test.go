package zktopo

import (
	"reflect"
	"slices"
	"testing"

	"spangle/shared/topo"
)

// TestPublishSharesUntouchedDBs: after one db changed, the next map holds
// the very same version maps for every other db, the changed db's new
// replica, and nothing is published when what was listed again did not
// change.
func TestPublishSharesUntouchedDBs(t *testing.T) {
	c := &Conn{mir: topo.NewMirror()}
	ca := benchCache(50)
	c.publishMap(ca)
	before := c.mir.Map()
	if before.Revision != 1 || len(before.DBs) != 50 {
		t.Fatalf("first map: revision %d, %d dbs", before.Revision, len(before.DBs))
	}

	vc := ca.dbs["db-0003"]["v2"]
	vc.replicas = append(vc.replicas, topo.ReplicaName(7, "10.0.0.9:9599"))
	ca.markDB("db-0003")
	c.publishMap(ca)
	after := c.mir.Map()
	if after.Revision != 2 {
		t.Fatalf("revision %d after a change, want 2", after.Revision)
	}
	if !slices.Contains(after.Replicas("db-0003", "v2", 7), "10.0.0.9:9599") {
		t.Errorf("db-0003 v2 partition 7: %v, want the new replica", after.Replicas("db-0003", "v2", 7))
	}
	if same(before.DBs["db-0003"], after.DBs["db-0003"]) {
		t.Error("the changed db's versions are the old map's")
	}
	for db, vs := range before.DBs {
		if db != "db-0003" && !same(vs, after.DBs[db]) {
			t.Errorf("%s was rebuilt though it did not change", db)
		}
	}
	if !reflect.DeepEqual(before.Nodes, after.Nodes) {
		t.Errorf("nodes %v, want %v", after.Nodes, before.Nodes)
	}

	// Listed again, unchanged: no new map.
	ca.markDB("db-0007")
	ca.nodesChanged, ca.pinsChanged = true, true
	c.publishMap(ca)
	if got := c.mir.Map().Revision; got != 2 {
		t.Errorf("revision %d after listing unchanged dbs, nodes and pins again, want 2", got)
	}

	// A db gone from the cache leaves the map; a pin appears.
	delete(ca.dbs, "db-0010")
	ca.markDB("db-0010")
	ca.pins["db-0001"] = topo.Pin{Version: "v1", Generation: 1}
	ca.pinsChanged = true
	c.publishMap(ca)
	last := c.mir.Map()
	if _, ok := last.DBs["db-0010"]; ok || len(last.DBs) != 49 {
		t.Errorf("db-0010 still in the map (%d dbs)", len(last.DBs))
	}
	if last.PinOf("db-0001") != (topo.Pin{Version: "v1", Generation: 1}) {
		t.Errorf("pin of db-0001 %+v", last.PinOf("db-0001"))
	}
	if _, ok := before.DBs["db-0010"]; !ok {
		t.Error("an earlier map changed: maps must stay as published")
	}
}

// same reports whether a and b are one map object.
func same(a, b map[string]*topo.Version) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
