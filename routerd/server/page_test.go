package server

import (
	"fmt"
	"regexp"
	"testing"

	"spangle/shared/topo"
)

// manyDBsMap is n dbs db-0000.. of one version v1 with parts partitions on
// three nodes, two replicas each; every holeEvery-th db (from db-0000)
// has no replica of its partition 0 (none when holeEvery is 0).
func manyDBsMap(n, parts, holeEvery int) *topo.Map {
	var b topo.Builder
	nodes := []string{"a:1", "b:1", "c:1"}
	for _, a := range nodes {
		b.AddNode(topo.Node{Addr: a, ShardID: a})
	}
	for i := 0; i < n; i++ {
		db := fmt.Sprintf("db-%04d", i)
		b.AddVersion(db, "v1", topo.VersionInfo{NumPartitions: parts, Created: created})
		for p := 0; p < parts; p++ {
			if p == 0 && holeEvery > 0 && i%holeEvery == 0 {
				continue
			}
			b.AddReplica(db, "v1", p, nodes[(i+p)%3])
			b.AddReplica(db, "v1", p, nodes[(i+p+1)%3])
		}
	}
	return b.Build(0)
}

var (
	dbRow        = regexp.MustCompile(`<tr(?: class="attention")?><td><a href="/(db-\d{4})">`)
	partitionTbl = regexp.MustCompile(`<table class="partitions"`)
	pagerText    = regexp.MustCompile(`dbs (\d+)–(\d+) of (\d+), page (\d+) of (\d+)`)
)

// TestStatusPagePaged: the overview shows 100 dbs a page and no
// partition table; a page number out of range or not a number shows the
// nearest page; a db's own page has its partitions.
func TestStatusPagePaged(t *testing.T) {
	s, _, _ := newTestServer(t, manyDBsMap(250, 4, 0), 0)
	for _, c := range []struct {
		query       string
		rows, first int
		pager       string
	}{
		{"", 100, 0, "dbs 1–100 of 250, page 1 of 3"},
		{"?page=2", 100, 100, "dbs 101–200 of 250, page 2 of 3"},
		{"?page=3", 50, 200, "dbs 201–250 of 250, page 3 of 3"},
		{"?page=99", 50, 200, "dbs 201–250 of 250, page 3 of 3"},
		{"?page=-4", 100, 0, "dbs 1–100 of 250, page 1 of 3"},
		{"?page=abc", 100, 0, "dbs 1–100 of 250, page 1 of 3"},
	} {
		w := do(s, "GET", "/"+c.query)
		body := w.Body.String()
		rows := dbRow.FindAllStringSubmatch(body, -1)
		if w.Code != 200 || len(rows) != c.rows || rows[0][1] != fmt.Sprintf("db-%04d", c.first) {
			t.Errorf("/%s: status %d, %d db rows starting at %v; want 200, %d from db-%04d", c.query, w.Code, len(rows), rows[:min(1, len(rows))], c.rows, c.first)
		}
		if got := pagerText.FindString(body); got != c.pager {
			t.Errorf("/%s: pager %q, want %q", c.query, got, c.pager)
		}
		if partitionTbl.MatchString(body) {
			t.Errorf("/%s: the overview has partition tables", c.query)
		}
	}
	w := do(s, "GET", "/db-0042")
	if n := len(partitionTbl.FindAllString(w.Body.String(), -1)); w.Code != 200 || n != 1 {
		t.Errorf("/db-0042: status %d, %d partition tables; want 200 and 1", w.Code, n)
	}
}

// TestStatusPageAttention: a served db whose partition lost every
// replica is listed above the table, on every page, with why, and marked
// in its row.
func TestStatusPageAttention(t *testing.T) {
	s, mir, _ := newTestServer(t, manyDBsMap(150, 4, 0), 0)
	s.table.Current()                    // every db served
	mir.Publish(manyDBsMap(150, 4, 120)) // db-0000 and db-0120 lose partition 0
	for _, q := range []string{"", "?page=2"} {
		body := do(s, "GET", "/"+q).Body.String()
		for _, want := range []string{
			`<li><a href="/db-0000">db-0000</a>: <span class="ERROR">no replica for 1 of 4 partitions</span></li>`,
			`<li><a href="/db-0120">db-0120</a>: <span class="ERROR">no replica for 1 of 4 partitions</span></li>`,
		} {
			if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
				t.Errorf("/%s lacks %s", q, want)
			}
		}
	}
	body := do(s, "GET", "/").Body.String()
	if !regexp.MustCompile(`<tr class="attention"><td><a href="/db-0000">`).MatchString(body) ||
		regexp.MustCompile(`<tr class="attention"><td><a href="/db-0001">`).MatchString(body) {
		t.Errorf("only db-0000's row of page 1 should be marked:\n%s", body)
	}
}
