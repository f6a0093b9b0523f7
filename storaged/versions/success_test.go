package versions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spangle/shared/s3test"
	"spangle/shared/seqfile"
	"spangle/shared/source"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// stageV writes db/version's 4 files aside and returns a function that
// moves file i into root, as an upload file by file would.
func stageV(t *testing.T, root, version string) (put func(i int)) {
	t.Helper()
	stage := t.TempDir()
	testutil.WriteVersion(t, stage, "db", version, 4, testutil.Sharded, seqfile.WriterOptions{}, testutil.Records(400, version))
	dir := filepath.Join(root, "db", version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(i int) {
		name := fmt.Sprintf("part-%05d", i)
		b, err := os.ReadFile(filepath.Join(stage, "db", version, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manifest writes db/version/_SUCCESS as an S3A committer would, listing
// the version's 4 files.
func manifest(t *testing.T, root, version string) {
	t.Helper()
	var names []string
	for i := 0; i < 4; i++ {
		names = append(names, fmt.Sprintf(`"s3a://bucket/warehouse/db/%s/part-%05d"`, version, i))
	}
	body := `{"name":"org.apache.hadoop.fs.s3a.commit.files.SuccessData/1","committer":"magic","hostname":"worker-1",` +
		`"metrics":{"files_created":4},"filenames":[` + strings.Join(names, ",") + `]}`
	writeSuccess(t, root, version, body)
}

func writeSuccess(t *testing.T, root, version, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "db", version, source.SuccessFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSuccessManifestGatesLoad: a version whose _SUCCESS lists files not
// all there yet waits for them, and says so; a manifest that cannot be
// used is an error on /healthz; the served version serves throughout.
// On a local root and on S3.
func TestSuccessManifestGatesLoad(t *testing.T) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			var src source.Source
			var err error
			if kind == "local" {
				src, err = source.Open(root, source.Options{})
			} else {
				srv := s3test.Start(t)
				for _, kv := range srv.ClientEnv() {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v)
				}
				root = filepath.Join(srv.Bucket("bkt"), "root")
				src, err = source.Open("s3://bkt/root", source.Options{S3: source.S3Options{Endpoint: srv.Endpoint()}})
			}
			if err != nil {
				t.Fatal(err)
			}
			writeV(t, root, "db", "v1")
			h := start(t, t.TempDir(), t.TempDir(), func(o *Options) { o.Source = src })
			h.waitState("db", "v1", wire.StateActive)
			served := func(want string) {
				t.Helper()
				if val, name, err := h.get("db", "", "key-000004"); err != nil || name != want || val != "value-4-"+want {
					t.Fatalf("%q from %s, %v; want %s's value", val, name, err, want)
				}
			}

			// Two of four files and the manifest: v2 waits, and says why.
			put := stageV(t, root, "v2")
			put(0)
			put(2)
			manifest(t, root, "v2")
			h.m.Refresh()
			waitFor(t, "v2 waiting for its files", func() bool {
				r := h.m.Views().Health()["db"]["v2"].Reason
				return strings.Contains(r, "waiting for 2 file(s) its _SUCCESS manifest lists: part-00001, part-00003")
			})
			if st := h.m.Views().Status("db")["db"].Versions["v2"]; st.State != wire.StateBuilding || !strings.Contains(st.Reason, "part-00001") {
				t.Fatalf("status of v2: %+v", st)
			}
			served("v1")
			// One more: still waiting, for one.
			put(1)
			h.m.Refresh()
			waitFor(t, "v2 waiting for one file", func() bool {
				return strings.Contains(h.m.Views().Health()["db"]["v2"].Reason, "waiting for 1 file(s)")
			})
			served("v1")
			put(3)
			h.m.Refresh()
			h.waitState("db", "v2", wire.StateActive)
			if n := h.m.Views().Status("db")["db"].Versions["v2"].NumPartitions; n != 4 {
				t.Fatalf("v2 loaded with %d partitions, want 4", n)
			}
			served("v2")

			// A malformed manifest, then one too large: ERROR with the
			// reason; v2 serves on. Fixed, v3 loads.
			put3 := stageV(t, root, "v3")
			for i := 0; i < 4; i++ {
				put3(i)
			}
			writeSuccess(t, root, "v3", `{"committer":"magic","filenames":["part-00000",`)
			h.m.Refresh()
			h.waitState("db", "v3", wire.StateError)
			if r := h.m.Views().Health()["db"]["v3"].Reason; !strings.Contains(r, "_SUCCESS") || !strings.Contains(r, "not valid JSON") {
				t.Fatalf("v3's reason %q", r)
			}
			served("v2")
			writeSuccess(t, root, "v3", "{"+strings.Repeat(" ", source.MaxSuccessSize)+"}")
			h.m.Refresh()
			waitFor(t, "v3 failed as too large", func() bool {
				return strings.Contains(h.m.Views().Health()["db"]["v3"].Reason, "more than")
			})
			served("v2")
			manifest(t, root, "v3")
			h.m.Refresh()
			h.waitState("db", "v3", wire.StateActive)
			served("v3")
		})
	}
}

// An empty _SUCCESS keeps its old meaning: the job finished; the files
// there are the version.
func TestEmptySuccessLoadsWhatIsThere(t *testing.T) {
	root := t.TempDir()
	put := stageV(t, root, "v1")
	put(0)
	put(1)
	writeSuccess(t, root, "v1", "")
	h := start(t, root, t.TempDir(), nil)
	h.waitState("db", "v1", wire.StateActive)
	if n := h.m.Views().Status("db")["db"].Versions["v1"].NumPartitions; n != 2 {
		t.Fatalf("v1 has %d partitions, want the 2 files there", n)
	}
}
