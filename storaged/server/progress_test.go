package server

import (
	"bytes"
	"strings"
	"testing"

	"spangle/shared/wire"
)

func TestStatusPageShowsLoadProgress(t *testing.T) {
	st := wire.NodeStatus{Mode: "standalone", DBs: map[string]wire.DBStatus{"db": {Versions: map[string]wire.VersionStatus{
		"v2": {State: wire.StateBuilding, NumPartitions: 8, Partitions: []int{}, Progress: &wire.LoadProgress{
			FilesDone: 3, FilesTotal: 8, BytesDone: 1_500_000_000, BytesTotal: 4_000_000_000, Records: 12_000_000,
			ElapsedSeconds: 20, BytesPerSecond: 75_000_000, RecordsPerSecond: 600_000, PreshardedFiles: 3}},
		"v1": {State: wire.StateActive, NumPartitions: 8, Partitions: []int{0, 1}},
	}}}}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pageData(st)); err != nil {
		t.Fatal(err)
	}
	want := "<b>loading:</b> 3 of 8 files, 1.5 GB of 4.0 GB (38%), 12000000 records in 20 s; 75.0 MB/s, 600000 records/s; 3 files pre-sharded, 0 spread"
	if got := buf.String(); !strings.Contains(got, want) {
		t.Fatalf("status page lacks %q:\n%s", want, got)
	}
	if strings.Count(buf.String(), "loading:") != 1 {
		t.Fatalf("progress shown for a version not loading:\n%s", buf.String())
	}
}
