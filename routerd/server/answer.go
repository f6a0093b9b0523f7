package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"spangle/routerd/proxy"
	"spangle/shared/topo"
)

// answer is a replica's response with its header values built once, so
// that a cache hit sends it without formatting or allocating them again.
// It is shared by every request the cache answers: never modify it.
type answer struct {
	resp          *proxy.Response
	version       []string // X-Sequins-Version
	proxiedTo     []string
	contentType   []string
	contentLength []string
	// created is the Created of the version the answer was built for;
	// lastModified is nil when there is none to send.
	created      time.Time
	lastModified []string
}

func (s *Server) newAnswer(version string, v *topo.Version, resp *proxy.Response) *answer {
	vh := s.memo.version(version, v)
	a := &answer{
		resp:          resp,
		version:       vh.version,
		proxiedTo:     s.memo.addr(resp.Addr),
		contentType:   s.ctype,
		contentLength: lengthValue(len(resp.Body)),
		created:       v.Created,
		lastModified:  vh.lastModified,
	}
	if vh.lastModified == nil {
		a.lastModified = lastModified(v, resp)
	}
	if resp.ContentType != "" {
		a.contentType = s.memo.addr(resp.ContentType)
	}
	return a
}

// smallLengths are the Content-Length values of bodies up to 4 KiB,
// formatted once: most values are small.
var smallLengths = func() [][]string {
	v := make([][]string, 4<<10+1)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// lengthValue is the Content-Length header value of n bytes; shared:
// never modify it.
func lengthValue(n int) []string {
	if n < len(smallLengths) {
		return smallLengths[n]
	}
	return []string{strconv.Itoa(n)}
}

// lastModified is the Last-Modified of a value: its version's creation
// when the map knows it, else what the replica said.
func lastModified(v *topo.Version, resp *proxy.Response) []string {
	switch {
	case !v.Created.IsZero():
		return []string{v.Created.UTC().Format(http.TimeFormat)}
	case resp.LastModified != "":
		return []string{resp.LastModified}
	}
	return nil
}

// lastModifiedFor is a's Last-Modified under v, which a cache hit may see
// in a newer map than the one a was built with.
func (a *answer) lastModifiedFor(v *topo.Version) []string {
	if v.Created.Equal(a.created) {
		return a.lastModified
	}
	return lastModified(v, a.resp)
}

// memoMax bounds each map of a headerMemo; a full one starts over.
const memoMax = 256

// headerMemo keeps the header values many answers share, a version's
// X-Sequins-Version and Last-Modified, a node's X-Sequins-Proxied-To and
// the Content-Type its answers carry, so that each uncached lookup does not format
// and allocate them again. Like answers, the values are shared: never
// modify them. It is safe for concurrent use.
type headerMemo struct {
	mu       sync.RWMutex
	versions map[versionKey]versionHeaders // guarded by mu
	addrs    map[string][]string           // guarded by mu
}

type versionKey struct {
	name string
	v    *topo.Version
}

type versionHeaders struct {
	version []string
	// lastModified is the version's creation time, nil when the map
	// does not know it (the replica's answer says then).
	lastModified []string
}

func newHeaderMemo() *headerMemo {
	return &headerMemo{versions: map[versionKey]versionHeaders{}, addrs: map[string][]string{}}
}

func (m *headerMemo) version(name string, v *topo.Version) versionHeaders {
	k := versionKey{name, v}
	m.mu.RLock()
	vh, ok := m.versions[k]
	m.mu.RUnlock()
	if ok {
		return vh
	}
	vh = versionHeaders{version: []string{name}}
	if !v.Created.IsZero() {
		vh.lastModified = []string{v.Created.UTC().Format(http.TimeFormat)}
	}
	m.mu.Lock()
	if len(m.versions) >= memoMax {
		clear(m.versions)
	}
	m.versions[k] = vh
	m.mu.Unlock()
	return vh
}

func (m *headerMemo) addr(a string) []string {
	m.mu.RLock()
	v, ok := m.addrs[a]
	m.mu.RUnlock()
	if ok {
		return v
	}
	v = []string{a}
	m.mu.Lock()
	if len(m.addrs) >= memoMax {
		clear(m.addrs)
	}
	m.addrs[a] = v
	m.mu.Unlock()
	return v
}
