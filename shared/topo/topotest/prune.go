package topotest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"spangle/shared/topo"
)

// runPrune runs the cases of Coordination.PruneVersion.
func runPrune(t *testing.T, b Backend) {
	t.Run("PruneUnservedVersion", func(t *testing.T) { testPrune(t, b) })
	t.Run("PruneRacesPublish", func(t *testing.T) { testPruneRace(t, b) })
}

func hasVersion(db, version string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { return m.Version(db, version) != nil }
}

func noVersion(db, version string) func(*topo.Map) bool {
	return func(m *topo.Map) bool { return m.Version(db, version) == nil }
}

func testPrune(t *testing.T, b Backend) {
	ctx := ctxT(t)
	// a leads and prunes; n is a storaged; w watches from a session of
	// its own, as another node or a router would.
	a, n, w := newCoord(t, b), newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer n.Close()
	defer w.Close()
	const addr = "127.0.0.1:7301"
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := n.PublishVersion(ctx, "prune", v, info(2)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"v1", "v2"} {
		if err := n.PublishPartition(ctx, "prune", v, 0, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.PublishPartition(ctx, "prune", "v2", 1, addr); err != nil {
		t.Fatal(err)
	}
	if _, err := n.PublishVersion(ctx, "prune2", "only", info(1)); err != nil {
		t.Fatal(err)
	}
	la := mustLead(t, campaign(ctx, a, "a:1"), "a")
	as := []topo.Assignment{assignment("prune", "v1", addr), assignment("prune", "v2", addr), assignment("prune", "v3", addr)}
	if _, err := a.Commit(ctx, fence(t, a, la), "a:1", as); err != nil {
		t.Fatal(err)
	}
	WaitMap(t, w, "the three versions", all(hasReplica("prune", "v1", 0, addr), hasReplica("prune", "v2", 1, addr),
		hasVersion("prune", "v3"), hasVersion("prune2", "only")))

	// v1 has lost its last replica, v2 still has one: only v1 goes,
	// with its assignment.
	if err := n.UnpublishPartition(ctx, "prune", "v1", 0, addr); err != nil {
		t.Fatal(err)
	}
	WaitMap(t, a, "v1 without replicas in the leader's map", noReplica("prune", "v1", 0, addr))
	if gone, err := a.PruneVersion(ctx, "prune", "v1"); err != nil || !gone {
		t.Fatalf("PruneVersion(v1, no replica) = %v, %v; want true", gone, err)
	}
	if err := n.UnpublishPartition(ctx, "prune", "v2", 1, addr); err != nil {
		t.Fatal(err)
	}
	if gone, err := a.PruneVersion(ctx, "prune", "v2"); err != nil || gone {
		t.Fatalf("PruneVersion(v2, replica of partition 0 live) = %v, %v; want false", gone, err)
	}
	WaitMap(t, w, "v1 gone, v2 and v3 kept", all(noVersion("prune", "v1"), hasReplica("prune", "v2", 0, addr), hasVersion("prune", "v3")))
	wantAssignments(t, a, as[1], as[2])

	// Pruning what is absent is not an error; a bad name is.
	for _, v := range []string{"v1", "never"} {
		if gone, err := a.PruneVersion(ctx, "prune", v); err != nil || !gone {
			t.Fatalf("PruneVersion(%s, absent) = %v, %v; want true", v, gone, err)
		}
	}
	if _, err := a.PruneVersion(ctx, "prune", "../v2"); !errors.Is(err, topo.ErrBadName) {
		t.Fatalf("PruneVersion of a bad name = %v, want ErrBadName", err)
	}

	// The last version of a db goes, and the db with it.
	if gone, err := a.PruneVersion(ctx, "prune2", "only"); err != nil || !gone {
		t.Fatalf("PruneVersion(prune2/only) = %v, %v; want true", gone, err)
	}
	WaitMap(t, w, "db prune2 gone", func(m *topo.Map) bool { return m.DBs["prune2"] == nil })

	// A pruned version stays pruned while nobody publishes under it,
	// whatever else its former publisher does.
	if gone, err := a.PruneVersion(ctx, "prune", "v3"); err != nil || !gone {
		t.Fatalf("PruneVersion(v3) = %v, %v; want true", gone, err)
	}
	if err := n.PublishPartition(ctx, "prune", "v2", 1, addr); err != nil {
		t.Fatal(err)
	}
	m := WaitMap(t, w, "v2's new replica", hasReplica("prune", "v2", 1, addr))
	if m.Version("prune", "v3") != nil {
		t.Errorf("pruned v3 is back after an unrelated publish: %s", dump(m))
	}
	// A node that serves a pruned version again creates its entry again,
	// with the info its Conn was given (v3). A Conn that has forgotten it
	// (v1: it unpublished all of it) creates the entry without info, as
	// for a partition published first, and its PublishVersion fills it.
	if err := n.PublishPartition(ctx, "prune", "v3", 1, addr); err != nil {
		t.Fatalf("PublishPartition under a pruned version: %v", err)
	}
	m = WaitMap(t, w, "v3 back with its replica", hasReplica("prune", "v3", 1, addr))
	if v := m.Version("prune", "v3"); v.NumPartitions != 2 || !v.Created.Equal(info(2).Created) {
		t.Errorf("v3 back as %+v, want the info %+v", v.VersionInfo, info(2))
	}
	if err := n.PublishPartition(ctx, "prune", "v1", 1, addr); err != nil {
		t.Fatalf("PublishPartition under a pruned version: %v", err)
	}
	if got, err := n.PublishVersion(ctx, "prune", "v1", info(2)); err != nil || got != info(2) {
		t.Fatalf("PublishVersion of pruned v1 = %+v, %v; want %+v", got, err, info(2))
	}
	WaitMap(t, w, "v1 back with its replica", hasReplica("prune", "v1", 1, addr))
	if got, err := n.PublishVersion(ctx, "prune2", "only", info(3)); err != nil || got != info(3) {
		t.Fatalf("PublishVersion of a pruned version = %+v, %v; want %+v", got, err, info(3))
	}
	WaitMap(t, w, "prune2/only back", hasVersion("prune2", "only"))
}

// testPruneRace prunes a version while a node publishes under it: once
// both are done, the replica is in the map under its version with its
// info, whichever came first.
func testPruneRace(t *testing.T, b Backend) {
	ctx := ctxT(t)
	a, n, w := newCoord(t, b), newCoord(t, b), newCoord(t, b)
	defer a.Close()
	defer n.Close()
	defer w.Close()
	const addr = "127.0.0.1:7311"
	kept, pruned := 0, 0
	for i := range 20 {
		v := fmt.Sprintf("v%02d", i)
		if _, err := n.PublishVersion(ctx, "race", v, info(1)); err != nil {
			t.Fatal(err)
		}
		var (
			wg     sync.WaitGroup
			gone   bool
			pubErr error
			prErr  error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			// Later and later, so that both orders happen.
			time.Sleep(time.Duration(i) * 250 * time.Microsecond)
			pubErr = n.PublishPartition(ctx, "race", v, 0, addr)
		}()
		go func() { defer wg.Done(); gone, prErr = a.PruneVersion(ctx, "race", v) }()
		wg.Wait()
		if pubErr != nil || prErr != nil {
			t.Fatalf("%s: PublishPartition = %v, PruneVersion = %v", v, pubErr, prErr)
		}
		if gone {
			pruned++
		} else {
			kept++
		}
		m := WaitMap(t, w, "race/"+v+" served", hasReplica("race", v, 0, addr))
		if got := m.Version("race", v); got.NumPartitions != 1 {
			t.Fatalf("race/%s = %+v after the race", v, got)
		}
		// Served now: pruning it is refused.
		if gone, err := a.PruneVersion(ctx, "race", v); err != nil || gone {
			t.Fatalf("PruneVersion(race/%s, served) = %v, %v; want false", v, gone, err)
		}
	}
	t.Logf("20 races: the prune came first %d times, the publish %d times", pruned, kept)
}
