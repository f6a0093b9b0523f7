package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds starting the browser and everything done in it.
const Timeout = 90 * time.Second

// ChromiumPath finds Debian's chromium, or the binary $CHROMIUM names.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found (apt-get install chromium, or set CHROMIUM=/path): the status page test needs a real browser")
	return ""
}

// Open starts a headless Chromium, loads url and waits until the status
// page's node table (#nodes) is visible. It returns the browser's
// context for chromedp.Run; the browser is closed when the test ends.
func Open(t testing.TB, ctx context.Context, url string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath(t)), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#nodes"))); err != nil {
		t.Fatalf("chromium on %s: %v", url, err)
	}
	return bctx
}
