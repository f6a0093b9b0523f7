package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"go.uber.org/zap/zaptest"

	"spangle/shared/seqfile"
	"spangle/shared/wire"
	"spangle/storaged/internal/testutil"
)

// Content-Length values, prebuilt or not, are the body's length.
func TestContentLength(t *testing.T) {
	s := newFixture(t, Options{}).srv
	for _, n := range []int{0, 1, 9, 10, 100, prebuiltLengths - 1, prebuiltLengths, prebuiltLengths + 1, 1 << 20} {
		if got := s.contentLength(n); len(got) != 1 || got[0] != strconv.Itoa(n) {
			t.Errorf("contentLength(%d) = %q", n, got)
		}
	}
}

// Over a socket, every value's answer carries its Content-Length and is
// not chunked, whether net/http writes the length (short values) or the
// handler does (HEAD, long values), on net/http and on the fast path.
func TestContentLengthOverSocket(t *testing.T) {
	sizes := []int{0, 1, 100, autoLengthMax - 1, autoLengthMax, autoLengthMax + 1, 4096, 100 << 10}
	var recs []testutil.Record
	for _, n := range sizes {
		recs = append(recs, testutil.Record{Key: fmt.Appendf(nil, "k%d", n), Value: bytes.Repeat([]byte{'v'}, n)})
	}
	root := t.TempDir()
	testutil.WriteVersion(t, root, "sizes", "1", 2, testutil.RoundRobin, seqfile.WriterOptions{}, recs)
	m := runManager(t, root, t.TempDir(), nil)
	waitActive(t, m, "sizes", "1")
	s, err := New(Options{Versions: m, Views: m.Views(), Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	fastAddr, fast := serveFast(t, s)
	for _, base := range []string{srv.URL, "http://" + fastAddr} {
		checkLengths(t, base, sizes)
	}
	if n := fast.Load(); n != int64(2*len(sizes)) {
		t.Errorf("%d lookups on the fast path, want %d", n, 2*len(sizes))
	}
}

// checkLengths asks base for every size's value, by GET and by HEAD.
func checkLengths(t *testing.T, base string, sizes []int) {
	t.Helper()
	for _, n := range sizes {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, base+wire.KeyPath("sizes", fmt.Appendf(nil, "k%d", n)), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := n
			if method == "HEAD" {
				want = 0
			}
			switch {
			case resp.StatusCode != http.StatusOK:
				t.Errorf("%s %d-byte value: status %d", method, n, resp.StatusCode)
			case resp.Header.Get("Content-Length") != strconv.Itoa(n) || resp.ContentLength != int64(n):
				t.Errorf("%s %d-byte value: Content-Length %q", method, n, resp.Header.Get("Content-Length"))
			case len(resp.TransferEncoding) != 0:
				t.Errorf("%s %d-byte value: Transfer-Encoding %q", method, n, resp.TransferEncoding)
			case len(body) != want:
				t.Errorf("%s %d-byte value: %d bytes of body", method, n, len(body))
			case resp.Header.Get(wire.HeaderVersion) != "1" || resp.Header.Get("Last-Modified") == "" || resp.Header.Get("Content-Type") == "":
				t.Errorf("%s %d-byte value: headers %v", method, n, resp.Header)
			}
		}
	}
}
