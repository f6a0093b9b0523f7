package server

import (
	"html/template"
	"sort"
	"strconv"
	"strings"

	"spangle/routerd/partmap"
)

// page is what the status page template renders, already sorted.
type page struct {
	Title       string
	MapRevision uint64
	MinRepl     int
	DBs         []pageDB
	Nodes       []NodeStatus
	Cache       string
}

type pageDB struct {
	Name     string
	Served   string
	Pin      *partmap.PinState
	Versions []pageVersion
}

type pageVersion struct {
	Name       string
	State      string
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

func pageData(st Status, db string) page {
	p := page{Title: "routerd", MapRevision: st.MapRevision, MinRepl: st.MinReplication, Nodes: st.Nodes}
	if db != "" {
		p.Title = "routerd: " + db
	}
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
	for _, n := range names {
		d := st.DBs[n]
		pd := pageDB{Name: n, Served: d.Served, Pin: d.Pin}
		vnames := make([]string, 0, len(d.Versions))
		for v := range d.Versions {
			vnames = append(vnames, v)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(vnames)))
		for _, vn := range vnames {
			v := d.Versions[vn]
			pv := pageVersion{Name: vn, State: v.State, Reason: v.Reason, Complete: v.Complete, Created: v.Created.UTC().Format("2006-01-02 15:04:05 MST")}
			for i, r := range v.Replicas {
				pv.Partitions = append(pv.Partitions, pagePartition{Index: i, Replicas: strings.Join(r, ", "), Missing: len(r) == 0})
			}
			pd.Versions = append(pd.Versions, pv)
		}
		p.DBs = append(p.DBs, pd)
	}
	return p
}

var statusPage = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}
.ACTIVE{color:#060;font-weight:bold}.BUILDING{color:#a60}.REMOVING{color:#777}.ERROR{color:#b00;font-weight:bold}
.open{color:#b00;font-weight:bold}.half-open{color:#a60}.closed{color:#060}
.missing{background:#fdd}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Map revision {{.MapRevision}}, min replication {{.MinRepl}}, cache {{.Cache}}.</p>
<h2>Databases</h2>
{{range $db := .DBs}}<section class="db" id="db-{{.Name}}">
<h3>{{.Name}} — serving {{if .Served}}<span class="ACTIVE">{{.Served}}</span>{{else}}nothing yet{{end}}</h3>
{{with .Pin}}<p class="pin">{{if .Pinned}}Pinned to <b>{{.Pinned}}</b> by _PIN: newer versions wait for the unpin{{else}}Unpinned{{end}} (pin generation {{.Generation}}).{{with .Pending}} Pin to {{.Version}} (generation {{.Generation}}) waits for the version to be complete; the served version is frozen meanwhile.{{end}}</p>
{{end}}{{range .Versions}}<h4>version {{.Name}}: <span class="{{.State}}">{{.State}}</span>{{if .Reason}} ({{.Reason}}){{end}}{{if not .Complete}} (incomplete){{end}}, built {{.Created}}</h4>
<table class="partitions" data-db="{{$db.Name}}" data-version="{{.Name}}">
<thead><tr><th>partition</th><th>replicas</th></tr></thead><tbody>
{{range .Partitions}}<tr{{if .Missing}} class="missing"{{end}}><td>{{.Index}}</td><td>{{if .Missing}}none{{else}}{{.Replicas}}{{end}}</td></tr>
{{end}}</tbody></table>
{{end}}</section>
{{else}}<p>No databases known yet.</p>
{{end}}
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>address</th><th>shard id</th><th>breaker</th><th>outstanding</th><th>latency (ms)</th><th>consecutive failures</th></tr></thead><tbody>
{{range .Nodes}}<tr><td>{{.Addr}}</td><td>{{.ShardID}}</td><td class="{{.Breaker}}">{{.Breaker}}</td><td>{{.Outstanding}}</td><td>{{printf "%.2f" .LatencyMS}}</td><td>{{.Failures}}</td></tr>
{{else}}<tr><td colspan="6">No storaged nodes known.</td></tr>
{{end}}</tbody></table>
<p><a href="/healthz">/healthz</a> · <a href="/metrics">/metrics</a></p>
</body></html>
`))
