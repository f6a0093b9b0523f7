package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"spangle/shared/wire"
)

// post sends a batch lookup: POST http://<addr>/<db> with req.Keys, one
// escaped key a line, pinned to req.Version, asking for the compact
// answer (wire.ContentTypeBatchBinary); a storaged that does not offer
// it answers JSON, and the answer's Content-Type says which it is.
// addr must be a registered node address.
func (u *HTTPUpstream) post(ctx context.Context, addr string, req *Request) (*Response, error) {
	var body []byte
	for _, k := range req.Keys {
		body = wire.AppendBatchKey(body, k)
	}
	hr := &http.Request{
		Method:        http.MethodPost,
		URL:           &url.URL{Scheme: u.scheme, Host: addr, Path: "/" + req.DB},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{wire.HeaderVersion: []string{req.Version}, "Accept": acceptBatch},
		Host:          addr,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		GetBody:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}
	hr = hr.WithContext(ctx)
	res, err := u.rt.RoundTrip(hr)
	if err != nil {
		return nil, fmt.Errorf("proxy: POST %s: %w", addr, err)
	}
	defer res.Body.Close()
	return u.read(addr, res)
}

var acceptBatch = []string{wire.ContentTypeBatchBinary + ", " + wire.ContentTypeJSON + ";q=0.5"}
