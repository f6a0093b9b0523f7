package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"spangle/shared/partitioner"
	"spangle/shared/seqfile"
	"spangle/shared/topo"
	"spangle/storaged/internal/testutil"
)

// The generated dataset of the tests: db "db", 8 partitions.
const (
	testDB     = "db"
	testParts  = 8
	testKeys   = 2000
	testRepl   = 2
	zkDeadline = 60 * time.Second
)

// writeVersion writes version of the test db under root: keys
// key-000000.. with values value-<i>-<version>, one file per partition.
func writeVersion(t testing.TB, root, version string) {
	t.Helper()
	testutil.WriteVersion(t, root, testDB, version, testParts, testutil.Sharded, seqfile.WriterOptions{},
		testutil.Records(testKeys, version))
}

func keyOf(i int) string { return fmt.Sprintf("key-%06d", i) }

func valueOf(i int, version string) string { return fmt.Sprintf("value-%d-%s", i, version) }

func partitionOf(i int) int { return partitioner.Partition([]byte(keyOf(i)), testParts) }

// zkChildren lists a znode's children straight from ZooKeeper, sorted.
// A missing znode has none.
func zkChildren(t testing.TB, zkAddr, path string) []string {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkAddr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("zk connect: %v", err)
	}
	defer conn.Close()
	var kids []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		kids, _, err = conn.Children(path)
		if err == nil || err == zk.ErrNoNode {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zk children of %s: %v", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Strings(kids)
	return kids
}

var testPaths = topo.Paths{Cluster: testCluster}

// replicaEntries returns, from ZooKeeper, the replica znodes of
// db/version that name addr.
func replicaEntries(t testing.TB, zkAddr, version, addr string) []string {
	var out []string
	for _, k := range zkChildren(t, zkAddr, testPaths.Version(testDB, version)) {
		if strings.HasSuffix(k, "@"+addr) {
			out = append(out, k)
		}
	}
	return out
}
