package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Batch is the answer of MultiGet: every distinct key asked is in
// exactly one of Found, Missing and Failed.
type Batch struct {
	// Version is the one version the whole answer is from.
	Version string
	// Found maps each key found (its bytes as a string) to its value.
	Found map[string][]byte
	// Missing lists the keys the version does not have.
	Missing [][]byte
	// Failed maps each key that could not be looked up to why; the rest
	// of the batch is still answered.
	Failed map[string]*KeyError
}

// KeyError says why one key of a batch failed. errors.Is matches it to
// the package's errors by its status (ErrUnavailable, ErrOverloaded,
// ErrGone).
type KeyError struct {
	Key []byte
	// Status is what a single GET of the key would have had.
	Status int
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("client: key %q: %s", e.Key, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnavailable) and the like hold.
func (e *KeyError) Unwrap() error { return kindOf(e.Status) }

// MultiGet looks up keys of db in batches (POST /<db>), BatchSize keys a
// request. The answer is from one version: after the first request, the
// others pin the version it answered from. A failure of the whole call
// is an error; keys that fail alone are in Batch.Failed.
func (c *Client) MultiGet(ctx context.Context, db string, keys [][]byte, opts ...Option) (*Batch, error) {
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	out := &Batch{Version: cl.version, Found: make(map[string][]byte, len(keys)), Failed: map[string]*KeyError{}}
	byEsc := make(map[string][]byte, len(keys))
	var escs []string
	for _, k := range keys {
		if len(k) == 0 {
			return nil, fmt.Errorf("%w: empty key in a batch", ErrBadRequest)
		}
		esc := url.PathEscape(string(k))
		if _, dup := byEsc[esc]; !dup {
			byEsc[esc] = k
			escs = append(escs, esc)
		}
	}
	u := c.base + "/" + url.PathEscape(db)
	for len(escs) > 0 {
		var body []byte
		n := 0
		for ; n < len(escs) && n < c.opts.BatchSize; n++ {
			if n > 0 && len(body)+len(escs[n])+1 > defaultBatchMaxBytes {
				break
			}
			body = append(append(body, escs[n]...), '\n')
		}
		status, hdr, b, err := c.do(ctx, http.MethodPost, u, body, out.Version)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, statusError(http.MethodPost, u, status, hdr, b)
		}
		a, err := decodeBatchAnswer(b)
		if err != nil {
			return nil, fmt.Errorf("client: POST %s: %w: %w", u, ErrUnavailable, err)
		}
		if out.Version != "" && a.Version != out.Version {
			return nil, fmt.Errorf("client: POST %s: answered version %q, asked %q: %w", u, a.Version, out.Version, ErrUnavailable)
		}
		out.Version = a.Version
		for _, esc := range escs[:n] {
			k := byEsc[esc]
			if v, ok := a.Found[esc]; ok {
				out.Found[string(k)] = v
			} else if reason, ok := a.Failed[esc]; ok {
				out.Failed[string(k)] = &KeyError{Key: k, Status: failStatus(reason), Reason: reason}
			}
		}
		for _, esc := range a.Missing {
			if k, ok := byEsc[esc]; ok {
				out.Missing = append(out.Missing, k)
			}
		}
		escs = escs[n:]
	}
	return out, nil
}
