package statictopo_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/topo/statictopo"
	"spangle/shared/wire"
)

// statusServer serves a storaged status page holding st; it insists on
// the JSON Accept header, as storaged serves HTML otherwise.
func statusServer(t *testing.T, st *atomic.Pointer[wire.NodeStatus]) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "want GET / as JSON", http.StatusNotAcceptable)
			return
		}
		json.NewEncoder(w).Encode(st.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func status(id string, versions map[string]wire.VersionStatus) *wire.NodeStatus {
	return &wire.NodeStatus{
		Node: topo.Node{ID: id, Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Mode: "standalone",
		DBs:  map[string]wire.DBStatus{"names": {Versions: versions}},
	}
}

func TestPollBuildsMapAndDropsSilentNodes(t *testing.T) {
	var st1, st2 atomic.Pointer[wire.NodeStatus]
	created := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	st1.Store(status("n1", map[string]wire.VersionStatus{
		"v1":     {State: wire.StateActive, NumPartitions: 2, Partitions: []int{0, 1}, Created: created},
		"v2":     {State: wire.StateBuilding, NumPartitions: 2, Partitions: []int{1}, Created: created},
		"broken": {State: wire.StateError, Reason: "corrupt", NumPartitions: 2, Partitions: []int{0}},
		"empty":  {State: wire.StateBuilding},
		"none":   {State: wire.StateBuilding, NumPartitions: 2},
	}))
	st2.Store(status("n2", map[string]wire.VersionStatus{
		"v1": {State: wire.StateActive, NumPartitions: 2, Partitions: []int{1, 7}, Created: created},
	}))
	s1, s2 := statusServer(t, &st1), statusServer(t, &st2)
	a1, a2 := strings.TrimPrefix(s1.URL, "http://"), strings.TrimPrefix(s2.URL, "http://")
	w, err := statictopo.New(statictopo.Options{URLs: []string{s1.URL, s2.URL + "/", s1.URL}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.Map(); m.Revision != 0 || len(m.Nodes) != 0 {
		t.Fatalf("map before the first poll: %+v", m)
	}
	ctx := context.Background()
	w.Poll(ctx)
	m := w.Map()
	if len(m.Nodes) != 2 || m.Nodes[a1].ID != "n1" || m.Nodes[a2].ShardID != a2 {
		t.Fatalf("nodes = %+v", m.Nodes)
	}
	if got := m.VersionNames("names"); !slices.Equal(got, []string{"v1", "v2"}) {
		t.Fatalf("versions = %v, want v1 v2 (no ERROR, no unknown count, none without partitions)", got)
	}
	v1 := m.Version("names", "v1")
	if !v1.Created.Equal(created) || !slices.Equal(v1.Replicas[0], []string{a1}) ||
		!slices.Equal(v1.Replicas[1], sorted(a1, a2)) || len(v1.Replicas) != 2 {
		t.Fatalf("v1 = %+v", v1)
	}
	if m.Version("names", "v2").Complete(1) {
		t.Error("v2 complete with partition 0 unloaded")
	}

	// Nothing changed: no new revision.
	rev := m.Revision
	w.Poll(ctx)
	if w.Map().Revision != rev {
		t.Errorf("revision moved on an unchanged poll: %d -> %d", rev, w.Map().Revision)
	}

	// A node that stops answering stays for Misses-1 polls with what it
	// last said, then leaves with its replicas.
	s2.Close()
	for i := 1; i < statictopo.DefaultMisses; i++ {
		w.Poll(ctx)
		if got := w.Map().Replicas("names", "v1", 1); !slices.Equal(got, sorted(a1, a2)) {
			t.Fatalf("replicas of v1/1 after %d missed polls = %v, want both still", i, got)
		}
	}
	w.Poll(ctx)
	m = w.Map()
	if _, ok := m.Nodes[a2]; ok || len(m.Nodes) != 1 {
		t.Fatalf("nodes after n2 went silent = %v", m.Nodes)
	}
	if got := m.Replicas("names", "v1", 1); !slices.Equal(got, []string{a1}) {
		t.Errorf("replicas of v1/1 after n2 left = %v", got)
	}
	// A node whose status changes is followed.
	st1.Store(status("n1", map[string]wire.VersionStatus{
		"v2": {State: wire.StateActive, NumPartitions: 2, Partitions: []int{0, 1}, Created: created},
	}))
	w.Poll(ctx)
	// v1 stays known, from silent n2's last word, without replicas.
	if m := w.Map(); !m.Version("names", "v2").Complete(1) || m.Version("names", "v1") == nil ||
		len(m.Replicas("names", "v1", 0))+len(m.Replicas("names", "v1", 1)) != 0 {
		t.Errorf("after the switch to v2: %v", m.DBs["names"])
	}
	// With every node silent, the versions they last listed (v2 by n1,
	// v1 by n2) stay known, without replicas: an outage is not a removal.
	s1.Close()
	for i := 0; i < statictopo.DefaultMisses; i++ {
		w.Poll(ctx)
	}
	m = w.Map()
	if len(m.Nodes) != 0 || !slices.Equal(m.VersionNames("names"), []string{"v1", "v2"}) {
		t.Fatalf("with every node silent: nodes %v, versions %v; want none, v1 v2", m.Nodes, m.VersionNames("names"))
	}
	for _, v := range []string{"v1", "v2"} {
		if reps := m.Version("names", v).Replicas; len(reps) != 2 || len(reps[0])+len(reps[1]) != 0 {
			t.Fatalf("replicas of %s with every node silent = %v", v, reps)
		}
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }

func TestRunStopsWithContext(t *testing.T) {
	var st atomic.Pointer[wire.NodeStatus]
	st.Store(status("n1", nil))
	s := statusServer(t, &st)
	// A read may take far more than a period on a loaded machine under
	// -race: the timeout is not what this test is about.
	w, err := statictopo.New(statictopo.Options{URLs: []string{s.URL}, Period: 10 * time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if m, err := w.Wait(wctx, 0); err != nil || len(m.Nodes) != 1 {
		t.Fatalf("Wait = %v, %v", m, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not stop")
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "https://h:1", "http://h", "http://h:1/x", "http://u@h:1", "h:1", "http://h:1?q"} {
		if _, err := statictopo.New(statictopo.Options{URLs: []string{u}}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := statictopo.New(statictopo.Options{}); err == nil {
		t.Error("New without URLs accepted")
	}
}
