package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"spangle/routerd/internal/browsertest"

	"github.com/chromedp/chromedp"
)

func TestStatusPageInChromium(t *testing.T) {
	s, _, _ := newTestServer(t, twoNodeMap(), 0)
	// Make one node's breaker visible as open.
	s.health.Node("a:1")
	base := serveForChromium(t, s)

	page := openInChromium(t, context.Background(), base+"/")
	if page.nodeRows != 2 || len(page.partRows) != 0 || len(page.dbRows) != 2 {
		t.Fatalf("overview: %d node rows, %d partition tables, db rows %v; want 2, none and 2\n%s", page.nodeRows, len(page.partRows), page.dbRows, page.body)
	}
	cells := strings.Join(page.nodeCells, "|")
	for _, want := range []string{"a:1", "b:1", "closed"} {
		if !strings.Contains(cells, want) {
			t.Errorf("node table lacks %q: %s", want, cells)
		}
	}
	for _, want := range []string{"db\tv2\t\tv2 ACTIVE, v1 REMOVING\t0", "half\tnothing yet\t\tv1 BUILDING (1/2)\t0"} {
		if !slices.Contains(page.dbRows, want) {
			t.Errorf("db rows %q lack %q", page.dbRows, want)
		}
	}
	if !slices.Equal(page.attention, []string{"half: nothing served"}) {
		t.Errorf("needs attention %q, want [half: nothing served]", page.attention)
	}

	page = openInChromium(t, context.Background(), base+"/db")
	if rows := page.partRows["db/v2"]; rows != 2 || page.nodeRows != 2 {
		t.Fatalf("db's page: %d partition rows of v2, %d node rows; want 2 and 2\n%s", rows, page.nodeRows, page.body)
	}
	for _, want := range []string{"serving v2", "a:1, b:1", "REMOVING"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("db's page lacks %q:\n%s", want, page.body)
		}
	}
}

// TestStatusPageManyDBs renders the overview of 500 dbs of 8 partitions,
// one in eight missing a partition (63): one page of 100 rows, and the
// needs-attention list bounded, in well under the second.
func TestStatusPageManyDBs(t *testing.T) {
	s, _, _ := newTestServer(t, manyDBsMap(500, 8, 8), 0)
	base := serveForChromium(t, s)
	start := time.Now()
	page := openInChromium(t, context.Background(), base+"/?page=5")
	took := time.Since(start)
	if len(page.dbRows) != pageSize || page.nodeRows != 3 {
		t.Fatalf("page 5: %d db rows, %d node rows; want %d and 3", len(page.dbRows), page.nodeRows, pageSize)
	}
	if first := page.dbRows[0]; !strings.HasPrefix(first, "db-0400\t") {
		t.Errorf("page 5 starts with %q, want db-0400", first)
	}
	if len(page.attention) != attentionMax+1 || page.attention[attentionMax] != "and 13 more" {
		t.Errorf("needs attention lists %d entries (last %q), want %d and \"and 13 more\"", len(page.attention), page.attention[len(page.attention)-1], attentionMax)
	}
	t.Logf("overview page of 500 dbs opened and read in Chromium in %v", took.Round(time.Millisecond))
}

// serveForChromium serves s on a loopback port until the test ends.
func serveForChromium(t *testing.T, s *Server) string {
	t.Helper()
	l, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + l.Addr().String()
}

// chromiumPage is what the status page showed in the browser.
type chromiumPage struct {
	body      string
	nodeRows  int
	nodeCells []string
	partRows  map[string]int // "<db>/<version>" -> rows of its partition table
	dbRows    []string       // the overview's db rows, cells joined by tabs
	attention []string       // the needs-attention list's entries
}

// openInChromium loads url in a headless Chromium and reads the status
// page's tables from the rendered DOM.
func openInChromium(t *testing.T, ctx context.Context, url string) chromiumPage {
	t.Helper()
	bctx := browsertest.Open(t, ctx, url)
	var p chromiumPage
	var err error
	p.body, err = chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	if err == nil {
		p.nodeRows, err = chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#nodes tbody tr').length`))
	}
	if err == nil {
		p.nodeCells, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#nodes tbody td')).map(td => td.innerText)`))
	}
	if err == nil {
		p.partRows, err = chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`Object.fromEntries(Array.from(document.querySelectorAll('table.partitions')).map(tb => [tb.dataset.db + "/" + tb.dataset.version, tb.querySelectorAll('tbody tr').length]))`))
	}
	if err == nil {
		p.dbRows, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#dbs tbody tr')).map(tr => Array.from(tr.cells).map(td => td.innerText).join("\t"))`))
	}
	if err == nil {
		p.attention, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#attention li')).map(li => li.innerText)`))
	}
	if err != nil {
		t.Fatalf("chromium on %s: %v", url, err)
	}
	return p
}
