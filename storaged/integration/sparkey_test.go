package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spangle/shared/seqfile"
	"spangle/shared/sparkey"
	"spangle/shared/wire"
	"spangle/shared/zktest"
	"spangle/storaged/internal/testutil"
)

// writeSparkeyVersion writes version of the test db as Sparkey pairs with
// logs of compression comp (uncompressed logs are served in place, logs
// in blocks streamed into tables), the keys and values of writeVersion.
func writeSparkeyVersion(t testing.TB, root, version string, keys int, comp sparkey.Compression) {
	t.Helper()
	testutil.WriteSparkeyVersion(t, root, testDB, version, testParts, sparkey.WriterOptions{Compression: comp},
		testutil.Records(keys, version))
}

// readEvery reads every key from the nodes together (each key from the
// first node that holds its partition) and returns the failures.
func readEvery(t *testing.T, keys int, version string, nodes ...*node) int {
	t.Helper()
	failed := 0
	for i := 0; i < keys; i++ {
		ok := false
		for _, n := range nodes {
			code, body, ver, err := n.get(testDB, keyOf(i))
			if err == nil && code == 200 && body == valueOf(i, version) && ver == version {
				ok = true
				break
			}
		}
		if !ok {
			failed++
		}
	}
	return failed
}

// TestSparkeyCluster: three nodes in cluster mode serve a Sparkey
// version (uncompressed logs, served in place); a node that lost its
// store copies what its peers serve (the pairs, checked); a
// next version that mixes formats fails with both files named while the
// Sparkey one keeps serving.
func TestSparkeyCluster(t *testing.T) {
	zks := zktest.Start(t)
	root := t.TempDir()
	nodes := []*node{startNode(t, zks.Addr(), root), startNode(t, zks.Addr(), root), startNode(t, zks.Addr(), root)}
	waitFor(t, zkDeadline, "every node registered", func() bool {
		return len(zkChildren(t, zks.Addr(), testPaths.Nodes())) == len(nodes)
	})
	writeSparkeyVersion(t, root, "v1", testKeys, sparkey.None)
	for _, n := range nodes {
		n.refresh()
	}
	waitActive(t, zkDeadline, testDB, "v1", nodes...)
	if failed := readEvery(t, testKeys, "v1", nodes...); failed > 0 {
		t.Fatalf("%d of %d keys not served", failed, testKeys)
	}

	// Node 2 loses its store: it copies its partitions from its peers.
	lost := nodes[2]
	lost.Stop()
	if err := os.RemoveAll(lost.store); err != nil {
		t.Fatal(err)
	}
	lost.Restart()
	waitActive(t, zkDeadline, testDB, "v1", lost)
	if got := lost.metric(`spangle_storaged_partitions_loaded_total{from="peer"}`); got < 1 {
		t.Errorf("partitions copied from peers: %v, want some", got)
	}
	if failed := readEvery(t, testKeys, "v1", lost); failed == testKeys {
		t.Fatal("the restarted node serves nothing")
	}

	// v2 mixes a SequenceFile into Sparkey pairs: it fails everywhere.
	dir := filepath.Join(root, testDB)
	tmp := t.TempDir()
	writeSparkeyVersion(t, tmp, "v2", testKeys, sparkey.Snappy)
	testutil.WriteFile(t, filepath.Join(tmp, testDB, "v2", "part-00099"), seqfile.WriterOptions{}, testutil.Records(3, "v2"))
	if err := os.Rename(filepath.Join(tmp, testDB, "v2"), filepath.Join(dir, "v2")); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		n.refresh()
	}
	waitFor(t, zkDeadline, "v2 in ERROR naming two files", func() bool {
		for _, n := range nodes {
			h := n.healthz()[testDB]["v2"]
			if h.State != wire.StateError || !strings.Contains(h.Reason, "part-00099") || !strings.Contains(h.Reason, ".sp") {
				return false
			}
		}
		return true
	})
	if failed := readEvery(t, testKeys, "v1", nodes...); failed > 0 {
		t.Fatalf("%d keys of v1 not served while v2 failed", failed)
	}
}

// TestSparkeyOnS3: a standalone node on the S3 root loads a Sparkey
// version (uncompressed, served in place) after a SequenceFile one, and
// serves every key of it; a
// truncated log in the next version fails it with the file and offset
// named while the Sparkey version keeps serving.
func TestSparkeyOnS3(t *testing.T) {
	_, _, dir := s3Setup(t)
	n := startOnS3(t)
	waitActive(t, 2*time.Minute, testDB, "v1", n)
	writeSparkeyVersion(t, dir, "v2", s3Keys, sparkey.None)
	waitActive(t, 2*time.Minute, testDB, "v2", n)
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads of the Sparkey version failed; first: %s", failed, first)
	}

	tmp := t.TempDir()
	writeSparkeyVersion(t, tmp, "v3", s3Keys, sparkey.Snappy)
	log := filepath.Join(tmp, testDB, "v3", "part-00003.spl")
	b, _ := os.ReadFile(log)
	os.WriteFile(log, b[:len(b)/2], 0o644)
	if err := os.Rename(filepath.Join(tmp, testDB, "v3"), filepath.Join(dir, testDB, "v3")); err != nil {
		t.Fatal(err)
	}
	var reason string
	waitFor(t, 2*time.Minute, "v3 in ERROR", func() bool {
		h := n.healthz()[testDB]["v3"]
		reason = h.Reason
		return h.State == wire.StateError
	})
	if !strings.Contains(reason, "part-00003.spl") || !strings.Contains(reason, "at byte") {
		t.Errorf("reason %q: want the file and the offset", reason)
	}
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads of v2 failed while v3 failed; first: %s", failed, first)
	}

	// A batch over the Sparkey version answers every key.
	keys := []string{keyOf(0), keyOf(1), keyOf(s3Keys - 1), "absent"}
	resp, err := client.Post("http://"+n.addr+"/"+testDB, "text/plain", strings.NewReader(strings.Join(keys, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var ans wire.BatchAnswer
	err = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if err != nil || ans.Version != "v2" || len(ans.Found) != 3 || string(ans.Found[keyOf(1)]) != valueOf(1, "v2") ||
		len(ans.Missing) != 1 {
		t.Fatalf("batch: %+v, %v", ans, err)
	}

	// A newer Sparkey version, then a _PIN back to v2 (in the bucket).
	writeSparkeyVersion(t, dir, "v4", s3Keys, sparkey.Snappy)
	waitActive(t, 2*time.Minute, testDB, "v4", n)
	if err := os.WriteFile(filepath.Join(dir, testDB, "_PIN"), []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "v2 served again under the pin", func() bool {
		_, body, ver, err := n.get(testDB, keyOf(5))
		return err == nil && ver == "v2" && body == valueOf(5, "v2")
	})
	if failed, first := readAll(n); failed > 0 {
		t.Fatalf("%d reads failed under the pin; first: %s", failed, first)
	}
}
