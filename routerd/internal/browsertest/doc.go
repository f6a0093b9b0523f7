// Package browsertest opens routerd's status page in a real headless
// Chromium (Debian's chromium, driven by chromedp) for tests. A missing
// browser fails the test with what to install; it never skips.
package browsertest
