package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// s3aSuccess is shaped like the _SUCCESS manifest of Hadoop's S3A
// committers (fields abridged).
const s3aSuccess = `{
  "name" : "org.apache.hadoop.fs.s3a.commit.files.SuccessData/1",
  "timestamp" : 1700000000000,
  "date" : "Tue Nov 14 22:13:20 UTC 2023",
  "hostname" : "worker-7",
  "committer" : "magic",
  "description" : "Task committer attempt_0001_m_000000_0",
  "jobId" : "job-1",
  "metrics" : { "files_created" : 2, "committer_commits_completed" : 2 },
  "diagnostics" : { "fs.s3a.committer.magic.enabled" : "true" },
  "filenames" : [ "/bucket/root/db/v1/part-00000", "s3a://bucket/root/db/v1/part-00001", "/bucket/root/db/v1/part-00000" ],
  "iostatistics" : { "counters" : { "op_create" : 1 } }
}`

func TestParseSuccess(t *testing.T) {
	for _, c := range []struct {
		name   string
		data   string
		listed bool
		files  []string
		bad    string
	}{
		{name: "empty", data: ""},
		{name: "white space", data: " \n"},
		{name: "a word", data: "done\n"},
		{name: "s3a manifest", data: s3aSuccess, listed: true, files: []string{"part-00000", "part-00001"}},
		{name: "manifest committer", data: `{"name":"x","success":true,"state":"committed","filenames":["abfs://c@a.dfs.core.windows.net/db/v1/part-00002","/d/v1/_logs", "/d/v1/.part-00002.crc"]}`,
			listed: true, files: []string{"part-00002"}},
		{name: "json without list", data: `{"committer":"file"}`},
		{name: "empty list", data: `{"filenames":[]}`, listed: true},
		{name: "truncated", data: s3aSuccess[:200], bad: "not valid JSON"},
		{name: "list of numbers", data: `{"filenames":[1,2]}`, bad: "not valid JSON"},
		{name: "failed job", data: `{"success":false,"filenames":["a"]}`, bad: "did not succeed"},
		{name: "empty name", data: `{"filenames":[""]}`, bad: "names no file"},
		{name: "oversized", data: "{" + strings.Repeat(" ", MaxSuccessSize) + "}", bad: "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseSuccess([]byte(c.data))
			if c.bad != "" {
				if !errors.Is(err, ErrBadSuccess) || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("err %v, want ErrBadSuccess saying %q", err, c.bad)
				}
				return
			}
			if err != nil || m.Listed != c.listed || !reflect.DeepEqual(m.Files, c.files) {
				t.Fatalf("got %+v, %v; want listed %v files %v", m, err, c.listed, c.files)
			}
		})
	}
	m, _ := ParseSuccess([]byte(s3aSuccess))
	if got := m.Missing([]File{{Name: "part-00001"}, {Name: "part-00009"}}); !reflect.DeepEqual(got, []string{"part-00000"}) {
		t.Fatalf("missing %v", got)
	}
	if m.Committer != "magic" {
		t.Fatalf("committer %q", m.Committer)
	}
}

// A _SUCCESS that is a FIFO is refused at once, never waited on.
func TestReadSuccessFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "db", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "db", "v1", SuccessFile), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadSuccess(context.Background(), "db", "v1"); !errors.Is(err, ErrBadSuccess) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO marker: %v, want ErrBadSuccess", err)
	}
}
