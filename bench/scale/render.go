package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chromedp/chromedp"

	"spangle/bench/stats"
)

// renders is how many times the status page is loaded; the median is
// kept.
const renders = 3

// chromium finds the browser: Options.Chromium, $CHROMIUM or Debian's.
func (r *run) chromium() (string, error) {
	for _, p := range []string{r.o.Chromium, os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("scale: chromium not found (apt-get install chromium, or set CHROMIUM=/path): the status page is timed in a real browser")
}

// render loads url (routerd's status page) in headless Chromium renders
// times and keeps the medians: from navigation to the node table
// (#nodes) visible, as a user waits for it, and the browser's own
// navigation-to-load-end.
func (r *run) render(ctx context.Context, url string, p *DBsPoint) error {
	size, err := pageSize(ctx, url)
	if err != nil {
		return err
	}
	p.PageKB = float64(size) / 1024
	path, err := r.chromium()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// Start the browser before timing anything.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		return fmt.Errorf("scale: chromium: %w", err)
	}
	var walls, loads []float64
	for i := 0; i < renders; i++ {
		t0 := time.Now()
		if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#nodes"))); err != nil {
			return fmt.Errorf("scale: chromium on %s: %w", url, err)
		}
		walls = append(walls, stats.Millis(time.Since(t0)))
		load, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`performance.getEntriesByType('navigation')[0].loadEventEnd`))
		if err != nil {
			return fmt.Errorf("scale: chromium: %w", err)
		}
		loads = append(loads, load)
		if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
			return fmt.Errorf("scale: chromium: %w", err)
		}
	}
	p.RenderMs, p.LoadEventMs = stats.Median(walls), stats.Median(loads)
	return nil
}
