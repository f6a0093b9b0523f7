package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"spangle/routerd/cache"
	"spangle/routerd/health"
	"spangle/routerd/partmap"
	"spangle/shared/buildinfo"
	"spangle/shared/topo"
	"spangle/shared/wire"
)

// Status is routerd's status page as JSON (GET / or /<db> with Accept:
// application/json).
type Status struct {
	// Build is the build of spangle routerd runs.
	Build          buildinfo.Info      `json:"build"`
	MapRevision    uint64              `json:"map_revision"`
	MinReplication int                 `json:"min_replication"`
	DBs            map[string]DBStatus `json:"dbs"`
	Nodes          []NodeStatus        `json:"nodes"`
	Cache          cache.Stats         `json:"cache"`
}

// DBStatus is one db: the version routerd serves and every version known.
type DBStatus struct {
	Served   string                   `json:"served_version"`
	Versions map[string]VersionStatus `json:"versions"`
	// Pin is the db's pin as routerd follows it (see partmap): the
	// version it holds the db at, the generation of the last step, and a
	// newer pin waiting for its version to be complete. Absent when no
	// pin was ever published.
	Pin *partmap.PinState `json:"pin,omitempty"`
	// PinError says why the nodes do not follow the db's _PIN marker, as
	// they report it (static discovery); what is served stays.
	PinError string `json:"pin_error,omitempty"`
}

// VersionStatus is one version and where its partitions live.
type VersionStatus struct {
	// State and Reason are what /healthz says of the version.
	State         string    `json:"state"`
	Reason        string    `json:"reason,omitempty"`
	NumPartitions int       `json:"num_partitions"`
	Created       time.Time `json:"created"`
	Complete      bool      `json:"complete"`
	// Replicas holds, per partition, the registered nodes serving it.
	Replicas [][]string `json:"replicas"`
	// PartitionsLoaded counts the partitions some registered node has
	// loaded and serves: a load's progress as the cluster map shows it
	// (each node's own files, bytes and records are on its status page).
	PartitionsLoaded int `json:"partitions_loaded"`
}

// NodeStatus is one storaged node as routerd sees it.
type NodeStatus struct {
	Addr        string    `json:"addr"`
	ShardID     string    `json:"shard_id"`
	Started     time.Time `json:"started"`
	Breaker     string    `json:"breaker"`
	Outstanding int64     `json:"outstanding"`
	LatencyMS   float64   `json:"latency_ms"`
	Failures    uint32    `json:"consecutive_failures"`
}

// Status returns the status of every db, or of one when db is not "".
func (s *Server) Status(db string) Status {
	st := s.table.Current()
	m := st.Map
	out := Status{Build: s.opts.Build, MapRevision: m.Revision, MinReplication: s.table.MinReplication(),
		DBs: map[string]DBStatus{}, Cache: s.cache.Stats()}
	for _, name := range m.DBNames() {
		if db != "" && name != db {
			continue
		}
		ds := DBStatus{Served: st.Served(name), Versions: map[string]VersionStatus{}, PinError: m.PinErrors[name]}
		if p := st.PinOf(name); p.Generation > 0 || p.Pending != nil {
			ds.Pin = &p
		}
		for vname, v := range m.DBs[name] {
			reps := make([][]string, len(v.Replicas))
			loaded := 0
			for p, r := range v.Replicas {
				reps[p] = registered(m, r)
				if len(reps[p]) > 0 {
					loaded++
				}
			}
			vh := versionHealth(st, name, vname, v)
			ds.Versions[vname] = VersionStatus{
				State:         vh.State,
				Reason:        vh.Reason,
				NumPartitions: v.NumPartitions,
				Created:       v.Created,
				Complete:      v.Complete(s.table.MinReplication()),
				Replicas:      reps,

				PartitionsLoaded: loaded,
			}
		}
		out.DBs[name] = ds
	}
	hs := map[string]health.NodeStatus{}
	for _, n := range s.health.Status() {
		hs[n.Addr] = n
	}
	for addr, n := range m.Nodes {
		h, ok := hs[addr]
		if !ok {
			h.Breaker = "closed"
		}
		out.Nodes = append(out.Nodes, NodeStatus{
			Addr: addr, ShardID: n.ShardID, Started: n.Started,
			Breaker: h.Breaker, Outstanding: h.Outstanding,
			LatencyMS: float64(h.Latency) / float64(time.Millisecond), Failures: h.Failures,
		})
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Addr < out.Nodes[j].Addr })
	return out
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// serveStatus answers / (db == "") and /<db>.
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request, db string) {
	st := s.Status(db)
	if db != "" {
		if _, ok := st.DBs[db]; !ok {
			httpError(w, http.StatusNotFound, "no such db")
			return
		}
		if v := st.DBs[db].Served; v != "" {
			w.Header().Set(wire.HeaderVersion, v)
		}
		if p := st.DBs[db].Pin; p != nil && p.Pinned != "" {
			w.Header().Set(wire.HeaderPin, p.Pinned)
		}
	}
	if wantsJSON(r) {
		writeJSON(w, r, http.StatusOK, st)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	pageNum, _ := strconv.Atoi(r.URL.Query().Get("page")) // not a number: the first page
	if err := statusPage.Execute(w, pageData(st, db, pageNum)); err != nil {
		s.log.Debug("server: writing status page failed")
	}
}

// serveHealth answers /healthz in sequins' shape: 200 when some db has a
// version served that a replica can answer from.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	st := s.table.Current()
	out := map[string]map[string]wire.Health{}
	code := http.StatusNotFound
	for db, versions := range st.Map.DBs {
		out[db] = map[string]wire.Health{}
		for name, v := range versions {
			h := versionHealth(st, db, name, v)
			out[db][name] = h
			if h.State == wire.StateActive {
				code = http.StatusOK
			}
		}
		if served := st.Served(db); served != "" && versions[served] == nil {
			out[db][served] = wire.Health{State: wire.StateError, Reason: "unavailable: the served version left the cluster map"}
		}
	}
	writeJSON(w, r, code, out)
}

// versionHealth is a version's state as /healthz and the status page
// show it. The served version is ACTIVE while a replica of any of its
// partitions is a live node; with none, the db is unavailable (ERROR,
// and lookups get 502), though routerd still knows it; with only some
// partitions left without one, it stays ACTIVE with a reason.
func versionHealth(st *partmap.State, db, name string, v *topo.Version) wire.Health {
	h := wire.Health{State: st.VersionState(db, name)}
	if p := st.Pin(db); p != "" && h.State == wire.StateBuilding && name > p {
		h.State, h.Reason = wire.StateHeld, wire.HeldReason(p)
	}
	if h.State != wire.StateActive {
		return h
	}
	missing := 0
	for _, r := range v.Replicas {
		if len(registered(st.Map, r)) == 0 {
			missing++
		}
	}
	switch {
	case missing == len(v.Replicas):
		h.State, h.Reason = wire.StateError, "unavailable: no replica of the served version is reachable"
	case missing > 0:
		h.Reason = fmt.Sprintf("degraded: %d of %d partitions have no reachable replica", missing, len(v.Replicas))
	}
	return h
}

func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		httpError(w, http.StatusInternalServerError, "server: encoding status: "+err.Error())
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
