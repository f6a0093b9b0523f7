package proctest

import "testing"

// PickAddr never hands out an address it gave lately, even when the
// kernel offers the port again at once.
func TestPickAddrNeverRepeatsLately(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < rememberPorts; i++ {
		addr, err := PickAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("pick %d: %s handed out twice", i, addr)
		}
		seen[addr] = true
	}
}
