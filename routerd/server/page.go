package server

import (
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"spangle/routerd/partmap"
	"spangle/shared/buildinfo"
	"spangle/shared/wire"
)

// The overview (/) shows one summary row per db, at most pageSize dbs a
// page (/?page=N), and above them the dbs that need attention on any
// page; a db's versions and partition tables are on its own page (/<db>).
// A page stays small however many dbs the cluster holds: 500 dbs of 8
// partitions made a 406 KB overview before it was paged.
const (
	pageSize     = 100
	attentionMax = 50
)

// page is what the status page template renders, already sorted.
type page struct {
	Title       string
	Build       buildinfo.Info
	MapRevision uint64
	MinRepl     int
	Nodes       []NodeStatus
	Cache       string

	// The overview: one page of summaries, and the dbs needing attention.
	Overview       bool
	Summaries      []dbSummary
	Attention      []dbSummary
	AttentionMore  int
	First, Last    int // 1-based positions of the page's dbs
	Total          int
	PageNum, Pages int
	Prev, Next     int // page numbers, 0 when there is none

	// One db's page: every version with its partitions.
	DBs []pageDB
}

// dbSummary is a db's row on the overview.
type dbSummary struct {
	Name, Link string
	Served     string
	Pinned     string
	Versions   []versionSummary
	// Missing counts the served version's partitions with no replica.
	Missing int
	// Why says what needs attention, "" when nothing does.
	Why string
}

type versionSummary struct {
	Name, State string
	// Loading is "k/N" (partitions loaded somewhere of the version's N)
	// for a version BUILDING; "" otherwise.
	Loading string
}

type pageDB struct {
	Name     string
	Served   string
	Pin      *partmap.PinState
	PinError string
	Versions []pageVersion
}

type pageVersion struct {
	Name       string
	State      string
	Loading    string // "k of N partitions loaded" while BUILDING
	Reason     string
	Complete   bool
	Created    string
	Partitions []pagePartition
}

type pagePartition struct {
	Index    int
	Replicas string
	Missing  bool
}

// pageData shapes st for the template: the overview's page pageNum when
// db is "", else db's own page.
func pageData(st Status, db string, pageNum int) page {
	p := page{Title: "routerd", Build: st.Build, MapRevision: st.MapRevision, MinRepl: st.MinReplication, Nodes: st.Nodes}
	if st.Cache.MaxBytes > 0 {
		p.Cache = strconv.Itoa(st.Cache.Entries) + " entries, " + strconv.FormatInt(st.Cache.Bytes, 10) +
			" of " + strconv.FormatInt(st.Cache.MaxBytes, 10) + " bytes"
	} else {
		p.Cache = "off"
	}
	names := make([]string, 0, len(st.DBs))
	for n := range st.DBs {
		names = append(names, n)
	}
	sort.Strings(names)
	if db != "" {
		p.Title = "routerd: " + db
		for _, n := range names {
			p.DBs = append(p.DBs, dbDetail(n, st.DBs[n]))
		}
		return p
	}

	p.Overview = true
	p.Total = len(names)
	p.Pages = max(1, (p.Total+pageSize-1)/pageSize)
	p.PageNum = min(max(pageNum, 1), p.Pages)
	if p.PageNum > 1 {
		p.Prev = p.PageNum - 1
	}
	if p.PageNum < p.Pages {
		p.Next = p.PageNum + 1
	}
	from, to := (p.PageNum-1)*pageSize, min(p.PageNum*pageSize, p.Total)
	p.First, p.Last = from+1, to
	for i, n := range names {
		sum := summarize(n, st.DBs[n])
		if sum.Why != "" {
			if len(p.Attention) < attentionMax {
				p.Attention = append(p.Attention, sum)
			} else {
				p.AttentionMore++
			}
		}
		if i >= from && i < to {
			p.Summaries = append(p.Summaries, sum)
		}
	}
	return p
}

// summarize is db's overview row.
func summarize(name string, d DBStatus) dbSummary {
	sum := dbSummary{Name: name, Link: "/" + url.PathEscape(name), Served: d.Served}
	if d.Pin != nil {
		sum.Pinned = d.Pin.Pinned
	}
	var why []string
	for _, vn := range newestFirst(d.Versions) {
		v := d.Versions[vn]
		vsum := versionSummary{Name: vn, State: v.State}
		if v.State == wire.StateBuilding {
			vsum.Loading = fmt.Sprintf("%d/%d", v.PartitionsLoaded, v.NumPartitions)
		}
		sum.Versions = append(sum.Versions, vsum)
		if v.State == wire.StateError {
			why = append(why, vn+" "+v.State+": "+v.Reason)
		}
	}
	if v, ok := d.Versions[d.Served]; ok {
		for _, r := range v.Replicas {
			if len(r) == 0 {
				sum.Missing++
			}
		}
	}
	switch {
	case d.Served == "":
		why = append([]string{"nothing served"}, why...)
	case sum.Missing > 0:
		why = append(why, fmt.Sprintf("no replica for %d of %d partitions", sum.Missing, len(d.Versions[d.Served].Replicas)))
	}
	sum.Why = strings.Join(why, ", ")
	return sum
}

// dbDetail is db's own page: every version, newest first, with its
// partitions.
func dbDetail(name string, d DBStatus) pageDB {
	pd := pageDB{Name: name, Served: d.Served, Pin: d.Pin, PinError: d.PinError}
	for _, vn := range newestFirst(d.Versions) {
		v := d.Versions[vn]
		pv := pageVersion{Name: vn, State: v.State, Reason: v.Reason, Complete: v.Complete, Created: v.Created.UTC().Format("2006-01-02 15:04:05 MST")}
		if v.State == wire.StateBuilding {
			pv.Loading = fmt.Sprintf("%d of %d partitions loaded", v.PartitionsLoaded, v.NumPartitions)
		}
		for i, r := range v.Replicas {
			pv.Partitions = append(pv.Partitions, pagePartition{Index: i, Replicas: strings.Join(r, ", "), Missing: len(r) == 0})
		}
		pd.Versions = append(pd.Versions, pv)
	}
	return pd
}

func newestFirst(vs map[string]VersionStatus) []string {
	names := make([]string, 0, len(vs))
	for v := range vs {
		names = append(names, v)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	return names
}

var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}
.ACTIVE{color:#060;font-weight:bold}.BUILDING{color:#a60}.HELD{color:#36c}.REMOVING{color:#777}.ERROR{color:#b00;font-weight:bold}
.open{color:#b00;font-weight:bold}.half-open{color:#a60}.closed{color:#060}
.missing{background:#fdd}.attention td:first-child{border-left:3px solid #b00}
</style></head><body>
<h1>{{.Title}}</h1>
<p>spangle {{.Build.Version}} (commit {{.Build.Commit}}, {{.Build.GoVersion}}). Map revision {{.MapRevision}}, min replication {{.MinRepl}}, cache {{.Cache}}.</p>
<h2>Databases</h2>
{{if .Overview}}{{with .Attention}}<section id="attention"><h3>Needs attention</h3><ul>
{{range .}}<li><a href="{{.Link}}">{{.Name}}</a>: <span class="ERROR">{{.Why}}</span></li>
{{end}}{{if $.AttentionMore}}<li>and {{$.AttentionMore}} more</li>
{{end}}</ul></section>
{{end}}{{if .Total}}<p class="pager">dbs {{.First}}–{{.Last}} of {{.Total}}{{if gt .Pages 1}}, page {{.PageNum}} of {{.Pages}}{{if .Prev}} · <a href="/?page={{.Prev}}" rel="prev">previous</a>{{end}}{{if .Next}} · <a href="/?page={{.Next}}" rel="next">next</a>{{end}}{{end}}. A db's versions and partitions are on its page.</p>
<table id="dbs"><thead><tr><th>db</th><th>serving</th><th>pin</th><th>versions</th><th>partitions without a replica</th></tr></thead><tbody>
{{range .Summaries}}<tr{{if .Why}} class="attention"{{end}}><td><a href="{{.Link}}">{{.Name}}</a></td><td>{{if .Served}}<span class="ACTIVE">{{.Served}}</span>{{else}}nothing yet{{end}}</td><td>{{with .Pinned}}pinned to <b>{{.}}</b>{{end}}</td><td>{{range $i, $v := .Versions}}{{if $i}}, {{end}}{{.Name}} <span class="{{.State}}">{{.State}}</span>{{with .Loading}} ({{.}}){{end}}{{end}}</td><td{{if .Missing}} class="missing"{{end}}>{{.Missing}}</td></tr>
{{end}}</tbody></table>
{{else}}<p>No databases known yet.</p>
{{end}}{{else}}{{range $db := .DBs}}<section class="db" id="db-{{.Name}}">
<h3>{{.Name}} — serving {{if .Served}}<span class="ACTIVE">{{.Served}}</span>{{else}}nothing yet{{end}}</h3>
{{with .PinError}}<p><b>_PIN not followed:</b> {{.}}</p>{{end}}{{with .Pin}}<p class="pin">{{if .Pinned}}Pinned to <b>{{.Pinned}}</b> by _PIN: newer versions wait for the unpin{{else}}Unpinned{{end}} (pin generation {{.Generation}}).{{with .Pending}} Pin to {{.Version}} (generation {{.Generation}}) waits for the version to be complete; the served version is frozen meanwhile.{{end}}</p>
{{end}}{{range .Versions}}<h4>version {{.Name}}: <span class="{{.State}}">{{.State}}</span>{{with .Loading}}, {{.}}{{end}}{{if .Reason}} ({{.Reason}}){{end}}{{if not .Complete}} (incomplete){{end}}, built {{.Created}}</h4>
<table class="partitions" data-db="{{$db.Name}}" data-version="{{.Name}}">
<thead><tr><th>partition</th><th>replicas</th></tr></thead><tbody>
{{range .Partitions}}<tr{{if .Missing}} class="missing"{{end}}><td>{{.Index}}</td><td>{{if .Missing}}none{{else}}{{.Replicas}}{{end}}</td></tr>
{{end}}</tbody></table>
{{end}}</section>
{{end}}<p><a href="/">all dbs</a></p>
{{end}}<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>address</th><th>shard id</th><th>breaker</th><th>outstanding</th><th>latency (ms)</th><th>consecutive failures</th></tr></thead><tbody>
{{range .Nodes}}<tr><td>{{.Addr}}</td><td>{{.ShardID}}</td><td class="{{.Breaker}}">{{.Breaker}}</td><td>{{.Outstanding}}</td><td>{{printf "%.2f" .LatencyMS}}</td><td>{{.Failures}}</td></tr>
{{else}}<tr><td colspan="6">No storaged nodes known.</td></tr>
{{end}}</tbody></table>
<p><a href="/healthz">/healthz</a> · <a href="/metrics">/metrics</a></p>
</body></html>
`))
