package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"spangle/shared/wire"
)

// Status returns the status page's JSON: every db, or one when db is not "".
func (s *Server) Status(db string) wire.NodeStatus {
	st := wire.NodeStatus{Node: s.opts.Node, Build: s.opts.Build, Mode: s.opts.Mode, DBs: s.opts.Views.Status(db)}
	if s.opts.Cluster != nil {
		st.Cluster = s.opts.Cluster()
	}
	if s.opts.Coordination != nil {
		st.Coordination = s.opts.Coordination()
	}
	if s.opts.Source != nil {
		src := s.opts.Source()
		st.Source = &src
	}
	return st
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// serveStatus answers / (db == "") and /<db>.
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request, db string) int {
	st := s.Status(db)
	if db != "" {
		if _, ok := st.DBs[db]; !ok {
			return httpError(w, r, http.StatusNotFound, "no such db")
		}
		if cur := s.opts.Versions.CurrentVersion(db); cur != "" {
			w.Header().Set(wire.HeaderVersion, cur)
		}
	}
	if wantsJSON(r) {
		return writeJSON(w, r, http.StatusOK, st)
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pageData(st)); err != nil {
		return httpError(w, r, http.StatusInternalServerError, "rendering status page failed")
	}
	return writeBody(w, r, http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

// serveHealth answers /healthz: 200 iff some version is ACTIVE.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) int {
	h := s.opts.Views.Health()
	code := http.StatusNotFound
	for db, vs := range h {
		if len(vs) == 0 {
			// A db directory that holds no version yet: nothing to
			// report, and an empty entry reads as a broken db.
			delete(h, db)
			continue
		}
		for _, v := range vs {
			if v.State == wire.StateActive {
				code = http.StatusOK
			}
		}
	}
	if s.opts.Source != nil {
		if src := s.opts.Source(); src.Error != "" {
			h[wire.HealthSource] = map[string]wire.Health{src.Root: {State: wire.StateError,
				Reason: "listing the source fails since " + src.Since.UTC().Format(time.RFC3339) + ": " + src.Error}}
		}
	}
	return writeJSON(w, r, code, h)
}

func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return httpError(w, r, http.StatusInternalServerError, "encoding failed")
	}
	return writeBody(w, r, code, "application/json", append(b, '\n'))
}

func writeBody(w http.ResponseWriter, r *http.Request, code int, ctype string, body []byte) int {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return code
}

type pageDB struct {
	Name     string
	Current  string
	Pin      string
	PinError string
	// FormatError says why _FORMAT is not followed.
	FormatError string
	Versions    []pageVersion
}

type pageVersion struct {
	Name string
	wire.VersionStatus
	// Loading says how far a load under way has come, in words.
	Loading string
}

type page struct {
	Status wire.NodeStatus
	DBs    []pageDB
}

func pageData(st wire.NodeStatus) page {
	p := page{Status: st}
	for name, d := range st.DBs {
		pd := pageDB{Name: name, Current: d.Current, Pin: d.Pin, PinError: d.PinError, FormatError: d.FormatError}
		for vname, v := range d.Versions {
			pd.Versions = append(pd.Versions, pageVersion{Name: vname, VersionStatus: v, Loading: progressText(v.Progress)})
		}
		sort.Slice(pd.Versions, func(i, j int) bool { return pd.Versions[i].Name > pd.Versions[j].Name })
		p.DBs = append(p.DBs, pd)
	}
	sort.Slice(p.DBs, func(i, j int) bool { return p.DBs[i].Name < p.DBs[j].Name })
	return p
}

// progressText says how far a load has come: files, bytes and records
// done of the total where known, the rates, and how the files were used.
func progressText(p *wire.LoadProgress) string {
	if p == nil {
		return ""
	}
	pct := ""
	if p.BytesTotal > 0 {
		pct = fmt.Sprintf(" (%.0f%%)", 100*float64(p.BytesDone)/float64(p.BytesTotal))
	}
	return fmt.Sprintf("%d of %d files, %s of %s%s, %d records in %.0f s; %s/s, %.0f records/s; %d files pre-sharded, %d spread",
		p.FilesDone, p.FilesTotal, humanBytes(float64(p.BytesDone)), humanBytes(float64(p.BytesTotal)), pct,
		p.Records, p.ElapsedSeconds, humanBytes(p.BytesPerSecond), p.RecordsPerSecond, p.PreshardedFiles, p.SpreadFiles)
}

// humanBytes writes n bytes in B, KB, MB, GB or TB (powers of 1000).
func humanBytes(n float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}

var pageTmpl = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>storaged {{.Status.Node.Addr}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}
td,th{border:1px solid #ccc;padding:.3em .7em;text-align:left;vertical-align:top}
.ACTIVE{color:#070}.ERROR{color:#b00}.BUILDING{color:#a60}.HELD{color:#36c}.REMOVING{color:#666}
</style></head><body>
<h1>storaged</h1>
<p>Node <b>{{.Status.Node.Addr}}</b> (id {{.Status.Node.ID}}, shard {{.Status.Node.ShardID}}), {{.Status.Mode}} mode, started {{.Status.Node.Started.Format "2006-01-02 15:04:05 MST"}}; spangle {{.Status.Build.Version}} (commit {{.Status.Build.Commit}}, {{.Status.Build.GoVersion}}).</p>
{{with .Status.Source}}<p>Source <b>{{.Root}}</b>{{if .Error}}: <span class="ERROR">listing fails since {{.Since.Format "2006-01-02 15:04:05 MST"}}: {{.Error}}</span>{{end}}</p>{{end}}
{{if not .DBs}}<p>No databases.</p>{{end}}
{{range .DBs}}
<h2>{{.Name}}</h2>
<p>Active version: {{if .Current}}<b>{{.Current}}</b>{{else}}none{{end}}</p>
{{if .Pin}}<p>Pinned by _PIN to <b>{{.Pin}}</b>: newer versions are not served until the marker is deleted.</p>{{end}}
{{if .PinError}}<p><b>_PIN not followed:</b> {{.PinError}}</p>{{end}}{{if .FormatError}}<p><b>_FORMAT not followed:</b> {{.FormatError}}</p>{{end}}
<table><tr><th>version</th><th>state</th><th>partitions held</th><th>created</th><th>loaded in</th><th>active since</th><th>reason</th></tr>
{{range .Versions}}<tr><td>{{.Name}}</td><td class="{{.State}}">{{.State}}</td><td>{{len .Partitions}} of {{.NumPartitions}} {{.Partitions}}</td><td>{{if not .Created.IsZero}}{{.Created.Format "2006-01-02 15:04:05 MST"}}{{end}}</td><td>{{if .LoadSeconds}}{{printf "%.2f s" .LoadSeconds}}{{end}}</td><td>{{if not .Activated.IsZero}}{{.Activated.Format "2006-01-02 15:04:05 MST"}}{{end}}</td><td>{{if .Loading}}<b>loading:</b> {{.Loading}}{{if .Reason}}; {{end}}{{end}}{{.Reason}}</td></tr>
{{end}}</table>
{{end}}
{{with .Status.Cluster}}<h2>Cluster</h2>
<p>{{len .Nodes}} live nodes: {{range $addr, $n := .Nodes}}{{$addr}} (shard {{$n.ShardID}}) {{end}}</p>
{{range $db, $vs := .DBs}}{{range $name, $v := $vs}}<p>{{$db}}/{{$name}}: {{$v.NumPartitions}} partitions; replicas {{range $p, $r := $v.Replicas}}[{{$p}}: {{range $r}}{{.}} {{end}}] {{end}}</p>
{{end}}{{end}}{{range $db, $p := .Pins}}<p>{{$db}}: {{if $p.Version}}pinned to <b>{{$p.Version}}</b>{{else}}unpinned{{end}} (pin generation {{$p.Generation}})</p>
{{end}}{{end}}
{{with .Status.Coordination}}<h2>Coordination</h2>
<p>Leader: {{if .Leader}}<b>{{.Leader}}</b>{{if .Leading}} (this node){{end}}{{else}}none{{end}}; ring version {{.RingVersion}} ({{.Nodes}} nodes); {{.Epoch}} decisions{{if .DecidedBy}}, the last by {{.DecidedBy}} at {{.LastDecision.Format "2006-01-02 15:04:05 MST"}}{{end}}.
Strategy {{.Strategy}}, quorum {{.Quorum}}, re-replication after {{.RereplicateAfter}}.</p>
{{if .InProgress}}<table><tr><th>assignment in progress</th><th>copies to fetch</th></tr>
{{range .InProgress}}<tr><td>{{.DB}}/{{.Version}}</td><td>{{.Pending}}</td></tr>
{{end}}</table>{{else}}<p>No assignment in progress.</p>{{end}}{{if .RoundError}}<p><b>The leader cannot decide</b> (since {{.RoundErrorSince.Format "2006-01-02 15:04:05 MST"}}): {{.RoundError}}</p>
{{end}}{{range $db, $e := .PinErrors}}<p><b>{{$db}}/_PIN not published:</b> {{$e}}</p>
{{end}}{{end}}
<p><a href="/healthz">healthz</a> · <a href="/metrics">metrics</a></p>
</body></html>
`))
