package server

import (
	"encoding/json"
	"strings"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// TestOutageKeepsDBKnown: with every replica of the served version gone
// from the map (their nodes silent) but the version still listed, the db
// stays known: lookups get 502, /healthz answers 404 naming the served
// version ERROR with a reason, and the status page shows the same.
func TestOutageKeepsDBKnown(t *testing.T) {
	s, mir, _ := newTestServer(t, twoNodeMap(), 0)
	if w := do(s, "GET", "/healthz"); w.Code != 200 {
		t.Fatalf("healthz before the outage: %d", w.Code)
	}
	var b topo.Builder
	for _, v := range []string{"v1", "v2"} {
		b.AddVersion("db", v, topo.VersionInfo{NumPartitions: 2, Created: created})
	}
	mir.Publish(b.Build(0))
	if w := do(s, "GET", "/db/k"); w.Code != 502 || w.Header().Get(wire.HeaderVersion) != "v2" {
		t.Fatalf("lookup during the outage: %d %v %q", w.Code, w.Header(), w.Body.String())
	}
	w := do(s, "GET", "/healthz")
	var hz map[string]map[string]wire.Health
	if err := json.Unmarshal(w.Body.Bytes(), &hz); err != nil {
		t.Fatal(err)
	}
	if h := hz["db"]["v2"]; w.Code != 404 || h.State != wire.StateError || !strings.Contains(h.Reason, "unavailable") {
		t.Fatalf("healthz during the outage: %d %s", w.Code, w.Body.String())
	}
	st := s.Status("db")
	if v := st.DBs["db"].Versions["v2"]; st.DBs["db"].Served != "v2" || v.State != wire.StateError || v.Reason == "" {
		t.Fatalf("status during the outage: %+v", st.DBs["db"])
	}
	if w := do(s, "GET", "/", "Accept", "text/html"); !strings.Contains(w.Body.String(), "unavailable") {
		t.Fatalf("status page during the outage does not say unavailable:\n%s", w.Body.String())
	}
	// One partition back: ACTIVE again, with a reason for the other.
	b = topo.Builder{}
	b.AddNode(topo.Node{Addr: "a:1"})
	b.AddVersion("db", "v2", topo.VersionInfo{NumPartitions: 2, Created: created})
	b.AddReplica("db", "v2", 0, "a:1")
	mir.Publish(b.Build(0))
	w = do(s, "GET", "/healthz")
	hz = nil
	if err := json.Unmarshal(w.Body.Bytes(), &hz); err != nil {
		t.Fatal(err)
	}
	if h := hz["db"]["v2"]; w.Code != 200 || h.State != wire.StateActive || !strings.Contains(h.Reason, "1 of 2") {
		t.Fatalf("healthz with one partition back: %d %s", w.Code, w.Body.String())
	}
}
