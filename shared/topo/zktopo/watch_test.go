package zktopo_test

import (
	"context"
	"testing"
	"time"

	"spangle/shared/topo"
	"spangle/shared/topo/topotest"
	"spangle/shared/zktest"
)

// A version pruned and created again while a mirror was cut off (by a
// node loading it late) is read again by that mirror once it is back,
// not taken for the one it knew.
func TestPrunedVersionCreatedAgain(t *testing.T) {
	srv := zktest.Start(t)
	p := srv.Proxy(t)
	c, w := open(t, srv.Addr()), open(t, p.Addr())
	ctx := context.Background()
	first := topo.VersionInfo{NumPartitions: 2, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	again := topo.VersionInfo{NumPartitions: 3, Created: first.Created.Add(time.Hour)}
	if _, err := c.PublishVersion(ctx, "db", "v1", first); err != nil {
		t.Fatal(err)
	}
	topotest.WaitMap(t, w, "db/v1", func(m *topo.Map) bool { return m.Version("db", "v1") != nil })
	p.Cut()
	if gone, err := c.PruneVersion(ctx, "db", "v1"); err != nil || !gone {
		t.Fatalf("PruneVersion = %v, %v", gone, err)
	}
	if _, err := c.PublishVersion(ctx, "db", "v1", again); err != nil {
		t.Fatal(err)
	}
	p.Heal() // well within the session timeout: the same session resumes
	topotest.WaitMap(t, w, "db/v1 as created again", func(m *topo.Map) bool {
		got := m.Version("db", "v1")
		return got != nil && got.VersionInfo == again
	})
}
