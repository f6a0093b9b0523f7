package zktopo_test

import (
	"context"
	"slices"
	"testing"

	"spangle/shared/topo"
	"spangle/shared/zktest"
)

// TestAssignmentReadsOne: Assignment reads the one db version's
// assignment the leader committed, says none for a version without one,
// and leaves one that fails validation out, as Assignments does.
func TestAssignmentReadsOne(t *testing.T) {
	srv := zktest.Start(t)
	c := open(t, srv.Addr())
	ctx := context.Background()
	const addr = "127.0.0.1:1"
	if err := c.RegisterNode(ctx, topo.Node{ID: "n1", Addr: addr}); err != nil {
		t.Fatal(err)
	}
	l, err := c.Campaign(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := c.Ring(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.LastDecision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	as := []topo.Assignment{
		{DB: "db", Version: "v1", Strategy: "sequins", Replicas: [][]string{{addr}, {addr}}},
		{DB: "other", Version: "v7", Strategy: "sequins", Replicas: [][]string{{addr}}},
	}
	if _, err := c.Commit(ctx, topo.Fence{Token: l.Token(), Ring: ring, Epoch: d.Epoch}, addr, as); err != nil {
		t.Fatal(err)
	}
	for _, want := range as {
		got, ok, err := c.Assignment(ctx, want.DB, want.Version)
		if err != nil || !ok {
			t.Fatalf("Assignment(%s, %s) = %v, %v", want.DB, want.Version, ok, err)
		}
		if got.DB != want.DB || got.Version != want.Version || len(got.Replicas) != len(want.Replicas) ||
			!slices.Equal(got.Replicas[0], want.Replicas[0]) {
			t.Errorf("Assignment(%s, %s) = %+v, want %+v", want.DB, want.Version, got, want)
		}
	}
	if _, ok, err := c.Assignment(ctx, "db", "v2"); ok || err != nil {
		t.Errorf("Assignment of a version without one = %v, %v; want false, nil", ok, err)
	}
	raw := srv.Raw(t)
	if _, err := raw.Conn.Set(topo.Paths{Cluster: cluster(t)}.Assignment("db", "v1"), []byte(`{"replicas":"garbage"`), -1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Assignment(ctx, "db", "v1"); ok || err != nil {
		t.Errorf("Assignment of an invalid entry = %v, %v; want false, nil", ok, err)
	}
}
