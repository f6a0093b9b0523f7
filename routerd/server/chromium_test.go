package server

import (
	"context"
	"strings"
	"testing"

	"spangle/routerd/internal/browsertest"

	"github.com/chromedp/chromedp"
)

func TestStatusPageInChromium(t *testing.T) {
	s, _, _ := newTestServer(t, twoNodeMap(), 0)
	// Make one node's breaker visible as open.
	s.health.Node("a:1")
	l, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, l) }()
	defer func() {
		cancel()
		<-done
	}()

	page := openInChromium(t, ctx, "http://"+l.Addr().String()+"/")
	nodeRows, partRows, nodeCells, body := page.nodeRows, page.partRows["db/v2"], page.nodeCells, page.body
	if nodeRows != 2 || partRows != 2 {
		t.Fatalf("node rows %d, partition rows of db v2 %d; want 2 and 2\n%s", nodeRows, partRows, body)
	}
	cells := strings.Join(nodeCells, "|")
	for _, want := range []string{"a:1", "b:1", "closed"} {
		if !strings.Contains(cells, want) {
			t.Errorf("node table lacks %q: %s", want, cells)
		}
	}
	for _, want := range []string{"serving v2", "a:1, b:1", "REMOVING", "BUILDING"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
}

// chromiumPage is what the status page showed in the browser.
type chromiumPage struct {
	body      string
	nodeRows  int
	nodeCells []string
	partRows  map[string]int // "<db>/<version>" -> rows of its partition table
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
	if err != nil {
		t.Fatalf("chromium on %s: %v", url, err)
	}
	return p
}
