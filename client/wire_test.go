package client

import "testing"

// The contract's pieces the client keeps its own copy of. clienttest
// checks them against the real daemons; these check them alone.
func TestWirePieces(t *testing.T) {
	if got := keyPath("db", []byte("a/b c%")); got != "/db/a%2Fb%20c%25" {
		t.Errorf("keyPath = %q", got)
	}
	for reason, want := range map[string]int{"503 overloaded": 503, "421 partition not held": 421, "404": 404, "oops": 0, "5030 x": 0, "": 0} {
		if got := failStatus(reason); got != want {
			t.Errorf("failStatus(%q) = %d, want %d", reason, got, want)
		}
	}
	a, err := decodeBatchAnswer([]byte(`{"version":"1","found":{"alice":"YWRtaW4="},"missing":["carol"],"failed":{"x":"503 overloaded"}}`))
	if err != nil || a.Version != "1" || string(a.Found["alice"]) != "admin" || a.Missing[0] != "carol" || a.Failed["x"] == "" {
		t.Errorf("decodeBatchAnswer = %+v, %v", a, err)
	}
	if _, err := decodeBatchAnswer([]byte("{")); err == nil {
		t.Error("decodeBatchAnswer accepted a truncated answer")
	}
}
