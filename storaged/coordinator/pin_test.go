package coordinator

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/source"
	"spangle/shared/topo"
	"spangle/shared/topo/memtopo"
)

// A pinned version is never pruned, however long it stays unserved, nor
// its assignment.
func TestSupersededKeepsPinned(t *testing.T) {
	var b topo.Builder
	b.AddNode(topo.Node{Addr: "n1", ShardID: "n1"})
	b.AddVersion("a", "v1", topo.VersionInfo{NumPartitions: 1})
	b.AddVersion("a", "v2", topo.VersionInfo{NumPartitions: 1})
	b.AddReplica("a", "v2", 0, "n1")
	b.AddPin("a", topo.Pin{Version: "v0", Generation: 3})
	m := b.Build(1)
	as := []topo.Assignment{{DB: "a", Version: "v0"}}
	if got, want := superseded(m, as, 1), []dbver.Version{{DB: "a", Version: "v1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("superseded with v0 pinned = %v, want %v", got, want)
	}
}

// The leader publishes a valid marker with a growing generation, and
// leaves the published pin alone for a malformed marker or one naming a
// version the source does not hold, showing why in its status.
func TestPublishPins(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		if err := os.MkdirAll(filepath.Join(root, "db", v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := source.Open(root, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := memtopo.NewServer()
	conn := srv.Conn()
	defer conn.Close()
	ctx := context.Background()
	c, err := New(Options{Conn: conn, Coord: conn, Self: topo.Node{Addr: "127.0.0.1:1", ShardID: "s"}, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	l, err := conn.Campaign(ctx, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PublishVersion(ctx, "db", "v2", topo.VersionInfo{NumPartitions: 1}); err != nil {
		t.Fatal(err)
	}
	step := func(marker string) PinStatus {
		t.Helper()
		p := filepath.Join(root, "db", source.PinFile)
		if marker == "" {
			os.Remove(p)
		} else if err := os.WriteFile(p, []byte(marker), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.publishPins(ctx, l, conn.Map()); err != nil {
			t.Fatal(err)
		}
		st := c.Status().Pins["db"]
		if got := conn.Map().PinOf("db"); got != st.Published {
			t.Fatalf("the map's pin %+v differs from the status' %+v", got, st.Published)
		}
		return st
	}
	if st := step(""); st.Published != (topo.Pin{}) || st.Error != "" {
		t.Fatalf("no marker: %+v", st)
	}
	if st := step("v1\n"); st.Published != (topo.Pin{Version: "v1", Generation: 1}) || st.Error != "" {
		t.Fatalf("pinned: %+v", st)
	}
	if st := step("v1\n"); st.Published.Generation != 1 {
		t.Fatalf("the same marker again moved the generation: %+v", st)
	}
	if st := step("v1 v2"); st.Published.Version != "v1" || !strings.Contains(st.Error, "malformed") {
		t.Fatalf("malformed marker: %+v", st)
	}
	if st := step("v7"); st.Published.Version != "v1" || !strings.Contains(st.Error, "not in the source") {
		t.Fatalf("missing version: %+v", st)
	}
	if st := step(""); st.Published != (topo.Pin{Generation: 2}) || st.Error != "" {
		t.Fatalf("unpinned: %+v", st)
	}
}

// The leader reads the markers at its first round, then once a
// PinPeriod, and at the next round after RefreshPins; with a negative
// period only at the first round and after RefreshPins.
func TestPinsDue(t *testing.T) {
	srv := memtopo.NewServer()
	conn := srv.Conn()
	defer conn.Close()
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		period time.Duration
		want   string
	}{
		{10 * time.Second, "read skip read read skip read"},
		{-1, "read skip read skip skip read"},
	} {
		c, err := New(Options{Conn: conn, Coord: conn, Self: topo.Node{Addr: "127.0.0.1:1", ShardID: "s"}, PinPeriod: tc.period})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		round := func(at time.Duration) {
			if c.pinsDue(t0.Add(at)) {
				got = append(got, "read")
			} else {
				got = append(got, "skip")
			}
		}
		round(0)
		round(time.Second)
		c.RefreshPins()
		round(2 * time.Second)
		round(12 * time.Second)
		round(13 * time.Second)
		c.RefreshPins()
		round(14 * time.Second)
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("period %v: rounds %q, want %q", tc.period, s, tc.want)
		}
	}
}
