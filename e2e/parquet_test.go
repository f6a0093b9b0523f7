//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"spangle/e2e/dataset"
	"spangle/e2e/framework"
	"spangle/e2e/load"
)

// The Parquet db the cluster serves beside the SequenceFile one, written
// before the start as Spark writes a table, with a _FORMAT that serves
// its rows as JSON.
const (
	parquetDB      = "e2e-parquet"
	parquetVersion = "v0001"
)

// parquetDB: every key of the Parquet db reads back through routerd as
// its row's JSON, from its version, with Content-Type application/json,
// while the SequenceFile db is served as before.
func (s *suite) parquetDB(t *testing.T, ctx context.Context, r *row) {
	base := s.routerURL(t, ctx)
	o := s.loadOptions(base)
	o.DB = parquetDB
	o.Value = dataset.ParquetValue
	err := framework.WaitFor(ctx, ready, 500*time.Millisecond, "routerd serving "+parquetDB, func(ctx context.Context) (bool, error) {
		probe := o
		probe.Keys = 200
		res := load.Sweep(ctx, probe)
		return res.Failed == 0 && res.Versions[parquetVersion] == res.Reads, fmt.Errorf("versions %v, %d failed", res.Versions, res.Failed)
	})
	if err != nil {
		t.Fatal(err)
	}
	res := load.Sweep(ctx, o)
	*r = fromResult(r.name, res)
	checkLoad(t, res)
	if res.Reads != dataset.DefaultKeys || res.Versions[parquetVersion] != dataset.DefaultKeys {
		t.Errorf("read %d keys, answers per version %v; want all %d from %s", res.Reads, res.Versions, dataset.DefaultKeys, parquetVersion)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+parquetDB+"/"+dataset.Key(42), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/json" {
		t.Errorf("GET %s/%s: %d, Content-Type %q; want 200 and application/json", parquetDB, dataset.Key(42), resp.StatusCode, ct)
	}
	s.waitServing(t, ctx, s.current)
}
