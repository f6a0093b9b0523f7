package zktest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Raw is a plain ZooKeeper client of s, for a test that writes what no
// spangle process would (a hostile or broken entry) or reads what one
// wrote. It is closed at the test's cleanup.
type Raw struct {
	t    testing.TB
	Conn *zk.Conn
}

// Raw connects a plain client to s.
func (s *Server) Raw(t testing.TB) *Raw {
	t.Helper()
	conn, _, err := zk.Connect([]string{s.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("zktest: connecting a raw client: %v", err)
	}
	t.Cleanup(conn.Close)
	return &Raw{t: t, Conn: conn}
}

// RawAuth connects a plain client to s that authenticates with the
// digest credential "user:password" (a cluster's, or Options.Super).
func (s *Server) RawAuth(t testing.TB, cred string) *Raw {
	t.Helper()
	r := s.Raw(t)
	if err := r.Conn.AddAuth("digest", []byte(cred)); err != nil {
		t.Fatalf("zktest: authenticating a raw client: %v", err)
	}
	return r
}

// superDigest is the superDigest property of "user:password":
// user:base64(sha1(user:password)), as ZooKeeper's digest provider
// computes it.
func superDigest(cred string) (string, error) {
	user, password, ok := strings.Cut(cred, ":")
	if !ok || user == "" {
		return "", fmt.Errorf("zktest: Options.Super is not user:password")
	}
	return zk.DigestACL(zk.PermAll, user, password)[0].ID, nil
}

// ACL returns path's ACL.
func (r *Raw) ACL(path string) []zk.ACL {
	r.t.Helper()
	acl, _, err := r.Conn.GetACL(path)
	if err != nil {
		r.t.Fatalf("zktest: reading the ACL of %s: %v", path, err)
	}
	return acl
}

// Put makes the persistent znode path hold data, creating it and its
// missing parents.
func (r *Raw) Put(path string, data []byte) {
	r.t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 1; i < len(parts); i++ {
		p := "/" + strings.Join(parts[:i], "/")
		if _, err := r.Conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			r.t.Fatalf("zktest: creating %s: %v", p, err)
		}
	}
	_, err := r.Conn.Create(path, data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = r.Conn.Set(path, data, -1)
	}
	if err != nil {
		r.t.Fatalf("zktest: writing %s: %v", path, err)
	}
}

// Delete deletes path and everything under it; a missing path is no
// error.
func (r *Raw) Delete(path string) {
	r.t.Helper()
	kids, _, err := r.Conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		r.t.Fatalf("zktest: listing %s: %v", path, err)
	}
	for _, k := range kids {
		r.Delete(path + "/" + k)
	}
	if err := r.Conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		r.t.Fatalf("zktest: deleting %s: %v", path, err)
	}
}
