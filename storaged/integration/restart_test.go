package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spangle/shared/wire"
)

// A restarted storaged answers no lookup of a db its local store holds
// complete with 404 or 410: from the moment its listener opens it either
// answers from the reopened version or says 503 with Retry-After until
// it can (issue #25, defect 8).
func TestRestartAnswersNo404(t *testing.T) {
	root, store := t.TempDir(), t.TempDir()
	writeVersion(t, root, "v1")
	n := startStandalone(t, root, store)
	waitFor(t, 30*time.Second, "v1 ACTIVE", func() bool { return n.state(testDB, "v1") == wire.StateActive })
	waitFor(t, 30*time.Second, "v1 complete in the local store", func() bool {
		b, err := os.ReadFile(filepath.Join(store, testDB, "v1", "spangle-version.json"))
		var man struct{ Complete bool }
		return err == nil && json.Unmarshal(b, &man) == nil && man.Complete
	})

	for round := 0; round < 3; round++ {
		n.Stop()
		n.Restart()
		fast := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		deadline := time.Now().Add(30 * time.Second)
		var ok, unready, refused int
		for i := 0; ok < 200; i++ {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d answers in 30s (%d unready, %d refused)", round, ok, unready, refused)
			}
			k := i % testKeys
			resp, err := fast.Get("http://" + n.addr + "/" + testDB + "/" + keyOf(k))
			if err != nil {
				var op interface{ Timeout() bool }
				if errors.As(err, &op) && op.Timeout() {
					t.Fatalf("round %d: lookup timed out: %v", round, err)
				}
				refused++ // not listening yet
				time.Sleep(time.Millisecond)
				continue
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok++
			case wire.StatusUnavailable:
				if resp.Header.Get("Retry-After") == "" {
					t.Fatalf("round %d: 503 without Retry-After", round)
				}
				unready++
			default:
				t.Fatalf("round %d: %s answered %d (version %q) after %d answers, %d unready, %d refused",
					round, keyOf(k), resp.StatusCode, resp.Header.Get(wire.HeaderVersion), ok, unready, refused)
			}
		}
		t.Logf("round %d: %d refused, %d unready (503), then %d answers", round, refused, unready, ok)
	}
}
