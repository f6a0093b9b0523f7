package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"spangle/routerd/internal/browsertest"
	"spangle/shared/topo"
)

// renderedPage is what routerd's status page showed in the browser.
type renderedPage struct {
	// nodes is the node table's address column.
	nodes []string
	// parts is, per "<db>/<version>", each partition row's replicas cell.
	parts map[string][]string
}

// renderStatusPage loads url in a headless Chromium and reads the node
// table and the partition tables from the rendered DOM.
func renderStatusPage(t *testing.T, url string) renderedPage {
	t.Helper()
	bctx := browsertest.Open(t, context.Background(), url)
	var p renderedPage
	var err error
	p.nodes, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#nodes tbody tr')).map(tr => tr.cells[0].innerText)`))
	if err == nil {
		p.parts, err = chromedp.Run(bctx, chromedp.Evaluate[map[string][]string](
			`Object.fromEntries(Array.from(document.querySelectorAll('table.partitions')).map(tb =>
				[tb.dataset.db + "/" + tb.dataset.version, Array.from(tb.querySelectorAll('tbody tr')).map(tr => tr.cells[1].innerText)]))`))
	}
	if err != nil {
		t.Fatalf("chromium on %s: %v", url, err)
	}
	return p
}

// checkStatusPage opens routerd's status page in Chromium once routerd
// routes by m, and checks that it shows m: a row per partition of db's
// version listing exactly its replicas, and a row per node.
func checkStatusPage(t *testing.T, rd *routerd, m *topo.Map, db, version string) {
	t.Helper()
	v := m.Version(db, version)
	want := make([]string, v.NumPartitions)
	for p := range want {
		reps := slices.Clone(m.Replicas(db, version, p))
		slices.Sort(reps)
		want[p] = strings.Join(reps, ", ")
	}
	var wantNodes []string
	for addr := range m.Nodes {
		wantNodes = append(wantNodes, addr)
	}
	slices.Sort(wantNodes)
	// routerd has a ZooKeeper session of its own: wait until its map is
	// m's too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := rd.r.Server().Status(db)
		got := make([]string, 0, v.NumPartitions)
		for _, reps := range st.DBs[db].Versions[version].Replicas {
			reps = slices.Clone(reps)
			slices.Sort(reps)
			got = append(got, strings.Join(reps, ", "))
		}
		if slices.Equal(got, want) && len(st.Nodes) == len(wantNodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("routerd's map %v never became ZooKeeper's %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}

	page := renderStatusPage(t, rd.base+"/"+db) // a db's partitions are on its own page
	var problems []string
	gotNodes := slices.Clone(page.nodes)
	slices.Sort(gotNodes)
	if !slices.Equal(gotNodes, wantNodes) {
		problems = append(problems, fmt.Sprintf("node table %v, want %v", page.nodes, wantNodes))
	}
	rows := page.parts[db+"/"+version]
	if len(rows) != len(want) {
		problems = append(problems, fmt.Sprintf("%d partition rows for %s %s, want %d", len(rows), db, version, len(want)))
	}
	for p := 0; p < len(rows) && p < len(want); p++ {
		cell := strings.Split(rows[p], ", ")
		slices.Sort(cell)
		if got := strings.Join(cell, ", "); got != want[p] {
			problems = append(problems, fmt.Sprintf("partition %d shows %q, ZooKeeper has %q", p, rows[p], want[p]))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("status page in Chromium: %s", strings.Join(problems, "; "))
	}
	t.Logf("status page in Chromium: %d nodes, %d partitions of %s %s, as in ZooKeeper", len(gotNodes), len(rows), db, version)
}
