//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
)

// The Sparkey db the cluster serves beside the SequenceFile one, written
// before the start.
const (
	sparkeyDB      = "e2e-sparkey"
	sparkeyVersion = "v0001"
)

// sparkeyDB: every key of the Sparkey db reads back through routerd,
// from its version, while the SequenceFile db is served as before.
func (s *suite) sparkeyDB(t *testing.T, ctx context.Context, r *row) {
	o := s.loadOptions(s.routerURL(t, ctx))
	o.DB = sparkeyDB
	err := framework.WaitFor(ctx, ready, 500*time.Millisecond, "routerd serving "+sparkeyDB, func(ctx context.Context) (bool, error) {
		probe := o
		probe.Keys = 200
		res := load.Sweep(ctx, probe)
		return res.Failed == 0 && res.Versions[sparkeyVersion] == res.Reads, fmt.Errorf("versions %v, %d failed", res.Versions, res.Failed)
	})
	if err != nil {
		t.Fatal(err)
	}
	res := load.Sweep(ctx, o)
	*r = fromResult(r.name, res)
	checkLoad(t, res)
	if res.Reads != dataset.DefaultKeys || res.Versions[sparkeyVersion] != dataset.DefaultKeys {
		t.Errorf("read %d keys, answers per version %v; want all %d from %s", res.Reads, res.Versions, dataset.DefaultKeys, sparkeyVersion)
	}
	s.waitServing(t, ctx, s.current)
}
