package sourcetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"spangle/shared/source"
)

// testSuccessManifest reads _SUCCESS markers: none, the plain empty
// one, a committer's JSON manifest, a malformed one and one too large
// to be a marker, whose read stops at the bound.
func testSuccessManifest(t *testing.T, b Backend) {
	ctx := context.Background()
	big := "{" + strings.Repeat(" ", source.MaxSuccessSize+4096) + "}"
	src := open(t, b, map[string]string{
		"db/none/part-0":     "x",
		"db/plain/part-0":    "x",
		"db/plain/_SUCCESS":  "",
		"db/listed/part-0":   "x",
		"db/listed/_SUCCESS": `{"committer":"magic","filenames":["s3a://bucket/root/db/listed/part-0","/bucket/root/db/listed/part-1"],"metrics":{"files_created":2}}`,
		"db/broken/part-0":   "x",
		"db/broken/_SUCCESS": `{"committer":"magic","filenames":["/bucket/root/db/broken/part-0",`,
		"db/huge/part-0":     "x",
		"db/huge/_SUCCESS":   big,
	}, source.Options{})
	if _, err := src.ReadSuccess(ctx, "db", "none"); !errors.Is(err, source.ErrNotFound) {
		t.Fatalf("no marker: %v, want ErrNotFound", err)
	}
	if m, err := src.ReadSuccess(ctx, "db", "plain"); err != nil || m.Listed {
		t.Fatalf("plain marker: %+v, %v", m, err)
	}
	m, err := src.ReadSuccess(ctx, "db", "listed")
	if err != nil || !m.Listed || !reflect.DeepEqual(m.Files, []string{"part-0", "part-1"}) {
		t.Fatalf("manifest: %+v, %v", m, err)
	}
	files, err := src.Files(ctx, "db", "listed")
	if err != nil {
		t.Fatal(err)
	}
	if miss := m.Missing(files); !reflect.DeepEqual(miss, []string{"part-1"}) {
		t.Fatalf("missing %v, want [part-1]", miss)
	}
	for _, v := range []string{"broken", "huge"} {
		if _, err := src.ReadSuccess(ctx, "db", v); !errors.Is(err, source.ErrBadSuccess) || !strings.Contains(err.Error(), "db/"+v+"/_SUCCESS") {
			t.Fatalf("%s marker: %v, want ErrBadSuccess naming it", v, err)
		}
	}
}
