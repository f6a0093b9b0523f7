package versions

import (
	"fmt"
	"testing"

	"spangle/storaged/internal/testutil"
)

// BenchmarkPublishOneVersionChanged is the snapshot work of one version's
// change of phase among dbs dbs of one active version each: what a start
// with many dbs pays a few times for each of its versions.
func BenchmarkPublishOneVersionChanged(b *testing.B) {
	for _, dbs := range []int{10, 500, 5000} {
		b.Run(fmt.Sprintf("dbs=%d", dbs), func(b *testing.B) {
			src, st := testutil.OpenStore(b, b.TempDir(), b.TempDir())
			m, err := New(Options{Source: src, Store: st})
			if err != nil {
				b.Fatal(err)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			for i := 0; i < dbs; i++ {
				vs := &vstate{name: "v1", phase: active, v: &Version{Name: "v1"}}
				m.dbs[fmt.Sprintf("db-%04d", i)] = &dbState{versions: map[string]*vstate{"v1": vs}, current: "v1"}
			}
			m.publishLocked()
			changing := m.dbs["db-0003"].versions["v1"]
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					changing.phase = superseded
				} else {
					changing.phase = active
				}
				m.publishLocked()
			}
		})
	}
}
