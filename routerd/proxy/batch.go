package proxy

import (
	"context"

	"spangle/shared/wire"
)

// post sends a batch lookup: POST http://<addr>/<db> with req.Keys, one
// escaped key a line, pinned to req.Version, asking for the compact
// answer (wire.ContentTypeBatchBinary); a storaged that does not offer
// it answers JSON, and the answer's Content-Type says which it is. It
// goes on the single GETs' connections (conn.go), written and read by
// the calling goroutine: through net/http's Transport, its writer and
// reader goroutines and its Request, Response and header maps cost
// routerd about a quarter of a 100-key batch's CPU (bench/README.md,
// "Batches through routerd, second round").
// addr must be a registered node address.
func (u *HTTPUpstream) post(ctx context.Context, addr string, req *Request) (*Response, error) {
	n := 0
	for _, k := range req.Keys {
		n += len(k) + 1
	}
	body := make([]byte, 0, n+n/4)
	for _, k := range req.Keys {
		body = wire.AppendBatchKey(body, k)
	}
	return u.gets.get(ctx, addr, "/"+req.DB, req.Version, body, u.maxValue)
}
