package scale

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Real answers of ss, cons and wchc, captured from a cluster of the dbs
// dimension (two storaged and routerd; lines shortened).
const (
	ssOut = `0      0      127.0.0.1:44478 127.0.0.1:38711 users:(("storaged",pid=24768,fd=9))
	 bbr wscale:10,10 rto:212 mss:32768 bytes_sent:6399 bytes_acked:6400 bytes_received:12507 segs_out:124 segs_in:109
0      0      127.0.0.1:44488 127.0.0.1:38711 users:(("storaged",pid=24760,fd=9))
	 bbr wscale:10,10 rto:212 bytes_sent:7953 bytes_retrans:55 bytes_acked:7899 bytes_received:15444 segs_out:150
0      0      127.0.0.1:44498 127.0.0.1:38711 users:(("routerd",pid=24769,fd=5))
	 bbr wscale:10,10 rto:212 bytes_sent:1372 bytes_acked:1373 bytes_received:6782 segs_out:41 segs_in:36
`
	consOut = ` /127.0.0.1:44498[1](queued=0,recved=26,sent=36,sid=0x10000315ad20003,lop=GETC,est=1795539773382,to=10000,lcxid=0x18,lzxid=0x5f,lresp=3241072,llat=0,minlat=0,avglat=7,maxlat=140)
 /127.0.0.1:37394[0](queued=0,recved=1,sent=0)
 /127.0.0.1:44488[1](queued=0,recved=117,sent=141,sid=0x10000315ad20000,lop=GETC,est=1795539772541,to=10000,lcxid=0x73,lzxid=0x5f,lresp=3241072,llat=0,minlat=0,avglat=14,maxlat=271)
 /127.0.0.1:44478[1](queued=0,recved=99,sent=109,sid=0x10000315ad20001,lop=GETC,est=1795539772530,to=10000,lcxid=0x61,lzxid=0x5f,lresp=3241072,llat=0,minlat=0,avglat=13,maxlat=329)

`
	wchcOut = `0x10000315ad20000
	/spangle/scale/v1/election/_c_3df245d4b9d3b60240006afd12a61082-n_0000000000
	/spangle/scale/v1/decision
0x10000315ad20001
	/spangle/scale/v1/election/_c_3df245d4b9d3b60240006afd12a61082-n_0000000000
0x10000315ad20009
	/spangle/scale/v1/nodes

`
)

func TestAttribute(t *testing.T) {
	got := attribute(ssOut, consOut, wchcOut)
	want := map[int]zkClient{
		24768: {BytesIn: 6399, BytesOut: 12507, PacketsIn: 99, PacketsOut: 109, DataWatches: 1},
		24760: {BytesIn: 7953, BytesOut: 15444, PacketsIn: 117, PacketsOut: 141, DataWatches: 2},
		24769: {BytesIn: 1372, BytesOut: 6782, PacketsIn: 26, PacketsOut: 36},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d processes %v, want %d", len(got), got, len(want))
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: got %+v, want %+v", pid, got[pid], w)
		}
	}
}

func TestParseMntr(t *testing.T) {
	out := "zk_version\t3.8.0\nzk_znode_count\t64\nzk_watch_count\t30\nzk_ephemerals_count\t43\n" +
		"zk_approximate_data_size\t3746\nzk_packets_received\t373\nzk_packets_sent\t445\nzk_bytes_received_count\t26378\n" +
		"zk_avg_znode_count\t1.5\n"
	got, err := parseMntr(out)
	if err != nil {
		t.Fatal(err)
	}
	want := zkTotals{Znodes: 64, Watches: 30, Ephemerals: 43, DataBytes: 3746, PacketsIn: 373, PacketsOut: 445, BytesIn: 26378}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := parseMntr(strings.Replace(out, "zk_watch_count\t30\n", "", 1)); err == nil {
		t.Fatal("mntr without zk_watch_count: no error")
	}
	if _, err := parseMntr(strings.Replace(out, "\t30\n", "\tmany\n", 1)); err == nil {
		t.Fatal("mntr with a bad number: no error")
	}
}

// The 100M keys are 64 files; smaller sizes keep files of about
// the same size, never fewer than make bench's 8.
func TestFilesFor(t *testing.T) {
	for n, want := range map[int]int{100_000: 8, 1_000_000: 8, 10_000_000: 8, 100_000_000: 64} {
		if got := filesFor(n); got != want {
			t.Errorf("filesFor(%d) = %d, want %d", n, got, want)
		}
	}
}

// The change's traffic is net of the idle window's, scaled to its length.
func TestNetOfIdle(t *testing.T) {
	p := DBsPoint{
		Idle:   Delta{Seconds: 5, ZK: zkTotals{PacketsIn: 50, PacketsOut: 50}, Clients: map[string]zkClient{"routerd": {BytesIn: 100, BytesOut: 400}}},
		Change: Delta{Seconds: 10, ZK: zkTotals{PacketsIn: 300, PacketsOut: 400}, Clients: map[string]zkClient{"routerd": {BytesIn: 1200, BytesOut: 5000}}},
	}
	if got := p.changePackets(); got != 500 {
		t.Errorf("changePackets = %v, want 700 - 2*100 = 500", got)
	}
	if got := p.changeBytes("routerd"); got != 5200 {
		t.Errorf("changeBytes = %v, want 6200 - 2*500 = 5200", got)
	}
}

// Plot draws both dimensions as PNGs, from one size (where a log axis
// of its own range would be empty) as from several.
func TestPlot(t *testing.T) {
	for _, n := range []int{1, 3} {
		res := &Results{}
		for i := 0; i < n; i++ {
			f := float64(i + 1)
			res.Keys = append(res.Keys, KeysPoint{Keys: 1_000_000 * (i + 1), LoadS: f, DecodeS: f / 2, ServingMB: 100 * f, ReqPerS: 1000 / f, P99Ms: 0})
			res.DBs = append(res.DBs, DBsPoint{DBs: 10 * (i + 1), ActiveS: f, ZK: zkTotals{Znodes: int64(100 * f)}, RouterdMB: 20})
		}
		dir := t.TempDir()
		paths, err := res.Plot(dir, "test")
		if err != nil {
			t.Fatalf("%d sizes: %v", n, err)
		}
		if len(paths) != 2 {
			t.Fatalf("%d sizes: plots %v, want keys and dbs", n, paths)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(p), err)
			}
			if img.Bounds().Dx() < 400 {
				t.Errorf("%s: %d pixels wide", filepath.Base(p), img.Bounds().Dx())
			}
		}
	}
}

func TestMarkdown(t *testing.T) {
	res := &Results{Note: "small run", Keys: []KeysPoint{
		{Keys: 1_000_000, Files: 8, LoadS: 1, LoadRunsS: []float64{1.1, 1, 0.9}, DecodeS: 0.5, ReqPerS: 1000},
		{Keys: 10_000_000, Files: 8, LoadS: 13, LoadRunsS: []float64{13}, DecodeS: 6.5, ReqPerS: 800}},
		DBs:      []DBsPoint{{DBs: 10, Partitions: 80, Clients: map[string]zkClient{"storaged-1": {BytesIn: 2048}, "routerd": {}}}},
		Failures: []string{"100M keys: disk full"}}
	var b bytes.Buffer
	if err := res.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**small run**", "| 1M | 8 |", "2.00x", "| 1.300 | 1.30x |", "Each load, s: 1M 1.10, 1.00, 0.90; 10M 13.00.", "| 10 | 80 |", "| 2/0 |", "not measured: 100M keys: disk full"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}
