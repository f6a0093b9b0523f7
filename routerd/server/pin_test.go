package server

import (
	"encoding/json"
	"strings"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/wire"
)

// A pin steps the served version back for every lookup, marks answers
// and the status with X-Spangle-Pin, shows in the JSON status, the page
// and the metrics; an unpin moves forward and drops the header.
func TestPinnedAnswers(t *testing.T) {
	s, mir, _ := newTestServer(t, twoNodeMap(), 1<<20)
	if w := do(s, "GET", "/db/k"); w.Body.String() != "v2:k" || w.Header().Get(wire.HeaderPin) != "" {
		t.Fatalf("before the pin: %q %v", w.Body.String(), w.Header())
	}
	m := twoNodeMap()
	m.Pins = map[string]topo.Pin{"db": {Version: "v1", Generation: 4}}
	mir.Publish(m)
	w := do(s, "GET", "/db/k")
	if w.Body.String() != "v1:k" || w.Header().Get(wire.HeaderVersion) != "v1" || w.Header().Get(wire.HeaderPin) != "v1" {
		t.Fatalf("pinned lookup: %q %v", w.Body.String(), w.Header())
	}
	w = do(s, "GET", "/db", "Accept", "application/json")
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if p := st.DBs["db"].Pin; p == nil || p.Pinned != "v1" || p.Generation != 4 || st.DBs["db"].Served != "v1" || w.Header().Get(wire.HeaderPin) != "v1" {
		t.Fatalf("pinned status: %s %v", w.Body.String(), w.Header())
	}
	if v2 := st.DBs["db"].Versions["v2"]; v2.State != wire.StateHeld || !strings.Contains(v2.Reason, "pinned to v1") {
		t.Fatalf("v2 under the pin: %+v", v2)
	}
	if body := do(s, "GET", "/").Body.String(); !strings.Contains(body, "pinned to <b>v1</b>") {
		t.Fatalf("the overview does not show the pin: %s", body)
	}
	if body := do(s, "GET", "/db").Body.String(); !strings.Contains(body, "Pinned to <b>v1</b>") || !strings.Contains(body, ">HELD<") {
		t.Fatalf("the db's page does not show the pin and v2 held: %s", body)
	}
	var hz map[string]map[string]wire.Health
	if err := json.Unmarshal(do(s, "GET", "/healthz").Body.Bytes(), &hz); err != nil {
		t.Fatal(err)
	}
	if v2 := hz["db"]["v2"]; v2.State != wire.StateHeld || !strings.Contains(v2.Reason, "pinned to v1") {
		t.Fatalf("healthz of v2 under the pin: %+v", v2)
	}
	body := do(s, "GET", "/metrics").Body.String()
	for _, want := range []string{`spangle_routerd_pinned{db="db",version="v1"} 1`, `spangle_routerd_pin_generation{db="db"} 4`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	m = twoNodeMap()
	m.Pins = map[string]topo.Pin{"db": {Generation: 5}}
	mir.Publish(m)
	if w := do(s, "GET", "/db/k"); w.Body.String() != "v2:k" || w.Header().Get(wire.HeaderPin) != "" {
		t.Fatalf("after the unpin: %q %v", w.Body.String(), w.Header())
	}
	if body := do(s, "GET", "/metrics").Body.String(); strings.Contains(body, "spangle_routerd_pinned{") {
		t.Errorf("metrics still show a pin after the unpin")
	}
}

// A marker the nodes do not follow shows in routerd's status too (JSON,
// which `spangle status` reads, and the db's page); what is served stays.
func TestPinErrorShows(t *testing.T) {
	s, mir, _ := newTestServer(t, twoNodeMap(), 1<<20)
	m := twoNodeMap()
	m.PinErrors = map[string]string{"db": `versions: pinned version "bogus" is not in the source; what is served stays`}
	mir.Publish(m)
	w := do(s, "GET", "/db", "Accept", "application/json")
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.DBs["db"].PinError != m.PinErrors["db"] || st.DBs["db"].Served != "v2" {
		t.Fatalf("status with a bad marker: %s", w.Body.String())
	}
	if body := do(s, "GET", "/db").Body.String(); !strings.Contains(body, "_PIN not followed") || !strings.Contains(body, "bogus") {
		t.Fatalf("the db's page does not show the bad marker: %s", body)
	}
	if w := do(s, "GET", "/db/k"); w.Body.String() != "v2:k" {
		t.Fatalf("lookup under a bad marker: %q", w.Body.String())
	}
}
