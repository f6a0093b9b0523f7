package server

import (
	"encoding/json"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// A superseded version that the cluster's leader prunes leaves the map:
// routerd goes on answering from the served version, a request pinning
// the pruned one gets 410, and the pages no longer list it.
func TestPrunedVersionLeavesTheMap(t *testing.T) {
	s, mir, _ := newTestServer(t, twoNodeMap(), 0)
	if w := do(s, "GET", "/db/k1", wire.HeaderVersion, "v1"); w.Code != 200 || w.Body.String() != "v1:k1" {
		t.Fatalf("pinned v1 before the prune: %d %q", w.Code, w.Body.String())
	}
	// Every node dropped v1, then the leader pruned it.
	m := twoNodeMap()
	m.DBs["db"]["v1"] = &topo.Version{VersionInfo: m.DBs["db"]["v1"].VersionInfo, Replicas: [][]string{nil, nil}}
	mir.Publish(m)
	if w := do(s, "GET", "/db/k1", wire.HeaderVersion, "v1"); w.Code != 410 {
		t.Fatalf("pinned v1 without replicas: %d", w.Code)
	}
	m = twoNodeMap()
	delete(m.DBs["db"], "v1")
	mir.Publish(m)
	if w := do(s, "GET", "/db/k1"); w.Code != 200 || w.Body.String() != "v2:k1" || w.Header().Get(wire.HeaderVersion) != "v2" {
		t.Fatalf("after the prune: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	if w := do(s, "GET", "/db/k1", wire.HeaderVersion, "v1"); w.Code != 410 {
		t.Fatalf("pinned v1 after the prune: %d", w.Code)
	}
	w := do(s, "GET", "/db", "Accept", "application/json")
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != 200 {
		t.Fatalf("status: %d %v", w.Code, err)
	}
	if d := st.DBs["db"]; d.Served != "v2" || len(d.Versions) != 1 || d.Versions["v2"].State != wire.StateActive {
		t.Fatalf("status after the prune: %+v", d)
	}
	w = do(s, "GET", "/healthz")
	var h map[string]map[string]wire.Health
	if err := json.Unmarshal(w.Body.Bytes(), &h); err != nil || w.Code != 200 || len(h["db"]) != 1 || h["db"]["v2"].State != wire.StateActive {
		t.Fatalf("healthz after the prune: %d %s", w.Code, w.Body.String())
	}
}
