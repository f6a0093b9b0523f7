package server

import (
	"encoding/json"
	"strings"
	"testing"

	"spangle/shared/topo"
)

// A version being loaded shows how many of its partitions some node has
// loaded: in the JSON status, on the overview and on the db's page.
func TestStatusShowsPartitionsLoaded(t *testing.T) {
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "a:1", ShardID: "a:1"})
	b.AddVersion("db", "v1", topo.VersionInfo{NumPartitions: 2, Created: created})
	b.AddReplica("db", "v1", 0, "a:1")
	b.AddReplica("db", "v1", 1, "a:1")
	b.AddVersion("db", "v2", topo.VersionInfo{NumPartitions: 3, Created: created})
	b.AddReplica("db", "v2", 1, "a:1")
	s, _, _ := newTestServer(t, b.Build(0), 0)
	var st Status
	if err := json.Unmarshal(do(s, "GET", "/db", "Accept", "application/json").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if v2 := st.DBs["db"].Versions["v2"]; v2.State != "BUILDING" || v2.PartitionsLoaded != 1 || v2.NumPartitions != 3 {
		t.Fatalf("v2: %+v", v2)
	}
	if v1 := st.DBs["db"].Versions["v1"]; v1.PartitionsLoaded != 2 {
		t.Fatalf("v1: %+v", v1)
	}
	if body := do(s, "GET", "/").Body.String(); !strings.Contains(body, `v2 <span class="BUILDING">BUILDING</span> (1/3)`) {
		t.Fatalf("overview lacks v2's progress: %s", body)
	}
	if body := do(s, "GET", "/db").Body.String(); !strings.Contains(body, "BUILDING</span>, 1 of 3 partitions loaded") {
		t.Fatalf("db page lacks v2's progress: %s", body)
	}
}
