package zktopo

import (
	"errors"
	"fmt"
	pathpkg "path"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"

	"spangle/shared/topo"
)

// Who may read the cluster's znodes when a credential is set
// (Options.ReadACL, [zk] acl_read).
const (
	// ReadWorld lets any ZooKeeper client read (the default): routers and
	// tools need no secret.
	ReadWorld = "world"
	// ReadAuth lets only the credential's identity read.
	ReadAuth = "auth"
)

// CheckReadACL accepts "" (ReadWorld), ReadWorld and ReadAuth.
func CheckReadACL(s string) error {
	switch s {
	case "", ReadWorld, ReadAuth:
		return nil
	}
	return fmt.Errorf("zktopo: acl_read %q is not %q or %q", s, ReadWorld, ReadAuth)
}

// acls are the ACLs a Conn creates znodes with. Without a credential
// every znode is open to all, as ZooKeeper's own default. With one, the
// cluster's znodes (/<prefix>/<cluster> and everything under it) give
// the identity every permission and, with ReadWorld, anyone read; the
// prefix's znodes above it, which clusters with other credentials may
// share, give the identity every permission and anyone create (so that
// those clusters can add theirs) and, with ReadWorld, read.
type acls struct {
	root     string // /<prefix>/<cluster>
	cluster  []zk.ACL
	prefix   []zk.ACL
	readAuth bool // only the identity may read
}

func newACLs(paths topo.Paths, cred Credential, read string) acls {
	open := zk.WorldACL(zk.PermAll)
	a := acls{root: pathpkg.Dir(paths.Root()), cluster: open, prefix: open}
	if cred.IsZero() {
		return a
	}
	a.readAuth = read == ReadAuth
	world := int32(0)
	if !a.readAuth {
		world = zk.PermRead
	}
	a.cluster = []zk.ACL{cred.digestACL(zk.PermAll)}
	if world != 0 {
		a.cluster = append(a.cluster, zk.WorldACL(world)[0])
	}
	a.prefix = []zk.ACL{cred.digestACL(zk.PermAll), zk.WorldACL(world | zk.PermCreate)[0]}
	return a
}

// forPath is the ACL a znode created at p gets.
func (a acls) forPath(p string) []zk.ACL {
	if a.inCluster(p) {
		return a.cluster
	}
	return a.prefix
}

func (a acls) inCluster(p string) bool { return p == a.root || strings.HasPrefix(p, a.root+"/") }

// writePerms are the permissions that change something.
const writePerms = zk.PermWrite | zk.PermCreate | zk.PermDelete | zk.PermAdmin

// worldPerms returns the permissions an ACL gives any client.
func worldPerms(acl []zk.ACL) int32 {
	var p int32
	for _, e := range acl {
		if e.Scheme == "world" && e.ID == "anyone" {
			p |= e.Perms
		}
	}
	return p
}

// sameACL reports whether two ACLs hold the same entries in any order.
func sameACL(a, b []zk.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(acl []zk.ACL) []string {
		out := make([]string, len(acl))
		for i, e := range acl {
			out[i] = fmt.Sprintf("%s:%s:%d", e.Scheme, e.ID, e.Perms)
		}
		sort.Strings(out)
		return out
	}
	ka, kb := key(a), key(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return false
		}
	}
	return true
}

// authHint is what an ACL refusal adds to its error.
const authHint = "the znode's ACL refuses this client: is [zk] auth_file or " + AuthEnv + " the cluster's credential?"

// refused names the znode when ZooKeeper's ACL refused op on it: the
// client's error alone ("zk: not authenticated") does not say where.
// Any other error is returned as it is.
func refused(op, path string, err error) error {
	if !errors.Is(err, zk.ErrNoAuth) {
		return err
	}
	return fmt.Errorf("%w: %s %s: %w (%s)", topo.ErrDenied, op, path, err, authHint)
}

// refusedMulti is refused for a multi-op: it names the first operation
// that the ACL refused.
func refusedMulti(ops []any, res []zk.MultiResponse, err error) error {
	if !errors.Is(err, zk.ErrNoAuth) && !opFailed(res, zk.ErrNoAuth) {
		return err
	}
	for i, r := range res {
		if i < len(ops) && errors.Is(r.Error, zk.ErrNoAuth) {
			switch op := ops[i].(type) {
			case *zk.CreateRequest:
				return refused("creating", op.Path, zk.ErrNoAuth)
			case *zk.SetDataRequest:
				return refused("writing", op.Path, zk.ErrNoAuth)
			case *zk.DeleteRequest:
				return refused("deleting", op.Path, zk.ErrNoAuth)
			case *zk.CheckVersionRequest:
				return refused("checking", op.Path, zk.ErrNoAuth)
			}
		}
	}
	return refused("a multi-op on", "the cluster's znodes", zk.ErrNoAuth)
}
