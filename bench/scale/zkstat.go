package scale

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"spangle/shared/zktest"
)

// zkTotals are ZooKeeper's server-wide figures from mntr: what mntr can
// say, since it counts for the whole server and names no client.
type zkTotals struct {
	Znodes     int64 `json:"znodes"`
	Watches    int64 `json:"watches"`
	Ephemerals int64 `json:"ephemerals"`
	// DataBytes is zk_approximate_data_size: the znodes' data and paths.
	DataBytes int64 `json:"data_bytes"`
	// PacketsIn and PacketsOut are requests received and answers and
	// watch events sent, since the server started.
	PacketsIn  int64 `json:"packets_in"`
	PacketsOut int64 `json:"packets_out"`
	// BytesIn is zk_bytes_received_count; mntr has no total of bytes
	// sent.
	BytesIn int64 `json:"bytes_in"`
}

// mntr reads zkTotals.
func mntr(zk *zktest.Server) (zkTotals, error) {
	out, err := zk.FourLetter("mntr")
	if err != nil {
		return zkTotals{}, fmt.Errorf("scale: mntr: %w", err)
	}
	return parseMntr(out)
}

// parseMntr reads zkTotals from mntr's answer; every figure must be
// there.
func parseMntr(out string) (zkTotals, error) {
	var t zkTotals
	fields := map[string]*int64{
		"zk_znode_count": &t.Znodes, "zk_watch_count": &t.Watches, "zk_ephemerals_count": &t.Ephemerals,
		"zk_approximate_data_size": &t.DataBytes, "zk_packets_received": &t.PacketsIn,
		"zk_packets_sent": &t.PacketsOut, "zk_bytes_received_count": &t.BytesIn,
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if dst := fields[k]; ok && dst != nil {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return zkTotals{}, fmt.Errorf("scale: mntr %s: %w", k, err)
			}
			*dst = n
			seen++
		}
	}
	if seen != len(fields) {
		return zkTotals{}, fmt.Errorf("scale: mntr gave %d of the %d figures wanted:\n%s", seen, len(fields), out)
	}
	return t, nil
}

func (a zkTotals) sub(b zkTotals) zkTotals {
	return zkTotals{Znodes: a.Znodes - b.Znodes, Watches: a.Watches - b.Watches, Ephemerals: a.Ephemerals - b.Ephemerals,
		DataBytes: a.DataBytes - b.DataBytes, PacketsIn: a.PacketsIn - b.PacketsIn, PacketsOut: a.PacketsOut - b.PacketsOut,
		BytesIn: a.BytesIn - b.BytesIn}
}

// zkClient is one process's ZooKeeper connection as the server and the
// kernel count it. A process that reconnected shows its new connection
// only, so deltas across a reconnect are wrong; the sums over
// connections it has at the moment are taken.
type zkClient struct {
	// BytesIn is what the process sent to ZooKeeper, BytesOut what
	// ZooKeeper sent it: the kernel's TCP counters of the connection
	// (ss), so the bytes are attributed to a process exactly.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// PacketsIn and PacketsOut are the server's per-connection counts
	// (cons: recved and sent).
	PacketsIn  int64 `json:"packets_in"`
	PacketsOut int64 `json:"packets_out"`
	// DataWatches are the data and exists watches the process's session
	// holds (wchc). ZooKeeper lists no child watches per session, and
	// the mirror's watches are child watches: those only mntr's total
	// counts.
	DataWatches int64 `json:"data_watches"`
}

func (a zkClient) sub(b zkClient) zkClient {
	return zkClient{BytesIn: a.BytesIn - b.BytesIn, BytesOut: a.BytesOut - b.BytesOut,
		PacketsIn: a.PacketsIn - b.PacketsIn, PacketsOut: a.PacketsOut - b.PacketsOut, DataWatches: a.DataWatches - b.DataWatches}
}

var (
	ssPid    = regexp.MustCompile(`pid=(\d+)`)
	ssSent   = regexp.MustCompile(`bytes_sent:(\d+)`)
	ssRecv   = regexp.MustCompile(`bytes_received:(\d+)`)
	consLine = regexp.MustCompile(`^\s*/[0-9.]+:(\d+)\[\d+\]\((.*)\)\s*$`)
)

// zkClients attributes ZooKeeper's clients to processes: ss lists the
// connections to the server's port with their owner's pid, local port
// and TCP byte counts; cons gives the server's packet counts and session
// per client port; wchc the data watches per session.
func zkClients(ctx context.Context, zk *zktest.Server) (map[int]zkClient, error) {
	port := zk.Addr()[strings.LastIndexByte(zk.Addr(), ':')+1:]
	ss, err := exec.CommandContext(ctx, "ss", "-tinpH", "state", "established", "( dport = :"+port+" )").Output()
	if err != nil {
		return nil, fmt.Errorf("scale: ss (iproute2): %w", err)
	}
	cons, err := zk.FourLetter("cons")
	if err != nil {
		return nil, fmt.Errorf("scale: cons: %w", err)
	}
	wchc, err := zk.FourLetter("wchc")
	if err != nil {
		return nil, fmt.Errorf("scale: wchc: %w", err)
	}
	return attribute(string(ss), cons, wchc), nil
}

// attribute joins the answers of ss, cons and wchc into each process's
// figures, by pid. Lines it cannot read are skipped: a connection that
// closed between the commands is simply not counted.
func attribute(ss, cons, wchc string) map[int]zkClient {
	clients := map[int]zkClient{}
	pidOfPort := map[string]int{}
	pid := -1
	for _, line := range strings.Split(ss, "\n") {
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			// Recv-Q Send-Q Local Peer Process
			pid = -1
			f := strings.Fields(line)
			if m := ssPid.FindStringSubmatch(line); m != nil && len(f) >= 3 {
				pid, _ = strconv.Atoi(m[1])
				pidOfPort[f[2][strings.LastIndexByte(f[2], ':')+1:]] = pid
			}
			continue
		}
		if pid < 0 {
			continue
		}
		c := clients[pid]
		if m := ssSent.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			c.BytesIn += n
		}
		if m := ssRecv.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			c.BytesOut += n
		}
		clients[pid] = c
	}
	pidOfSession := map[string]int{}
	for _, line := range strings.Split(cons, "\n") {
		m := consLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, ok := pidOfPort[m[1]]
		if !ok {
			continue
		}
		c := clients[pid]
		for _, kv := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "recved":
				c.PacketsIn += n
			case "sent":
				c.PacketsOut += n
			case "sid":
				pidOfSession[v] = pid
			}
		}
		clients[pid] = c
	}
	pid = -1
	for _, line := range strings.Split(wchc, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			p, ok := pidOfSession[strings.TrimSpace(line)]
			pid = -1
			if ok {
				pid = p
			}
		case strings.HasPrefix(line, "\t/") && pid >= 0:
			c := clients[pid]
			c.DataWatches++
			clients[pid] = c
		}
	}
	return clients
}
