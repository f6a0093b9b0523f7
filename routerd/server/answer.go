package server

import (
	"net/http"
	"strconv"
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
	a := &answer{
		resp:          resp,
		version:       []string{version},
		proxiedTo:     []string{resp.Addr},
		contentType:   s.ctype,
		contentLength: []string{strconv.Itoa(len(resp.Body))},
		created:       v.Created,
		lastModified:  lastModified(v, resp),
	}
	if resp.ContentType != "" {
		a.contentType = []string{resp.ContentType}
	}
	return a
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
