package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"spangle/shared/seqfile"
	"spangle/shared/zktest"
	"spangle/storaged/internal/testutil"
)

// linkVersion makes src's version appear at once under root/db/version:
// its files are hard-linked (copied if that fails) into a hidden
// directory, which is then renamed into place.
func linkVersion(b testing.TB, src, root, db, version string) {
	b.Helper()
	tmp := filepath.Join(root, db, "."+version+".tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		from, to := filepath.Join(src, e.Name()), filepath.Join(tmp, e.Name())
		if err := os.Link(from, to); err != nil {
			data, err := os.ReadFile(from)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(to, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.Rename(tmp, filepath.Join(root, db, version)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNewVersionToActive measures, for a version of 1M keys (100-byte
// values, 8 pre-sharded files), the time from its directory appearing in
// the source root (and a SIGHUP) to ACTIVE on all three nodes of a
// cluster on a real ZooKeeper. Run it with
//
//	go test ./storaged/integration -run '^$' -bench NewVersionToActive -benchtime 1x
func BenchmarkNewVersionToActive(b *testing.B) {
	const keys = 1_000_000
	data := filepath.Join(testutil.BenchDataset(b, keys, testParts, true), "bench", "1")
	zks := zktest.Start(b)
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "bench"), 0o755)
	nodes := []*node{startNode(b, zks.Addr(), root), startNode(b, zks.Addr(), root), startNode(b, zks.Addr(), root)}
	waitFor(b, zkDeadline, "three registered nodes", func() bool {
		return len(zkChildren(b, zks.Addr(), testPaths.Nodes())) == 3
	})
	time.Sleep(2 * time.Second) // past time_to_converge
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		version := fmt.Sprintf("v%04d", i+1)
		start := time.Now()
		linkVersion(b, data, root, "bench", version)
		for _, n := range nodes {
			n.refresh()
		}
		waitActive(b, 10*time.Minute, "bench", version, nodes...)
		total += time.Since(start)
		b.StopTimer()
		checkBenchKeys(b, nodes, version, keys)
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/active")
	b.ReportMetric(float64(keys)/(total.Seconds()/float64(b.N)), "keys/s")
}

// checkBenchKeys asks every node for a sample of keys: each holder
// answers the value, the others 421.
func checkBenchKeys(b *testing.B, nodes []*node, version string, keys int) {
	want := make([]byte, 100)
	for i := 0; i < keys; i += keys / 50 {
		testutil.BenchValue(want, i)
		served := 0
		for _, n := range nodes {
			code, body, ver, err := n.get("bench", string(testutil.BenchKey(i)))
			switch {
			case err == nil && code == 200 && body == string(want) && ver == version:
				served++
			case err == nil && code == 421:
			default:
				b.Fatalf("%s: key %d -> %d (version %q) %v", n.addr, i, code, ver, err)
			}
		}
		if served != testRepl {
			b.Fatalf("key %d served by %d nodes", i, served)
		}
	}
}

// BenchmarkZooKeeperFootprint reports the znodes and watches a cluster
// of three nodes keeps in ZooKeeper for 10 dbs of 64 partitions each. Run
// it with
//
//	go test ./storaged/integration -run '^$' -bench ZooKeeperFootprint -benchtime 1x
func BenchmarkZooKeeperFootprint(b *testing.B) {
	const dbs, parts = 10, 64
	zks := zktest.Start(b)
	root := b.TempDir()
	for d := 0; d < dbs; d++ {
		testutil.WriteVersion(b, root, fmt.Sprintf("db%02d", d), "v1", parts, testutil.Sharded, seqfile.WriterOptions{},
			testutil.Records(parts*4, "v1"))
	}
	nodes := []*node{startNode(b, zks.Addr(), root), startNode(b, zks.Addr(), root), startNode(b, zks.Addr(), root)}
	for d := 0; d < dbs; d++ {
		waitActive(b, 5*time.Minute, fmt.Sprintf("db%02d", d), "v1", nodes...)
	}
	for i := 0; i < b.N; i++ {
		mntr, err := zks.FourLetter("mntr")
		if err != nil {
			b.Fatal(err)
		}
		// mntr counts every session's watches; the nodes' sessions are the
		// only ones open (wchs answers 0 on ZooKeeper 3.8, so it is not used).
		sessions := mntrValue(b, mntr, "zk_global_sessions")
		watches := mntrValue(b, mntr, "zk_watch_count")
		b.ReportMetric(mntrValue(b, mntr, "zk_znode_count"), "znodes")
		b.ReportMetric(mntrValue(b, mntr, "zk_ephemerals_count")/sessions, "ephemerals/node")
		b.ReportMetric(watches, "watches")
		b.ReportMetric(watches/sessions, "watches/node")
	}
}

func mntrValue(b testing.TB, mntr, key string) float64 {
	for _, line := range strings.Split(mntr, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			v, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				return v
			}
		}
	}
	b.Fatalf("mntr lacks %s:\n%s", key, mntr)
	return 0
}
