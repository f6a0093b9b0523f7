package zktopo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"spangle/shared/topo"
)

// maxSecure bounds the znodes SetClusterACL visits in one run.
const maxSecure = 1_000_000

// SecureReport is what SetClusterACL found and did.
type SecureReport struct {
	// Root is the cluster's znode, /<prefix>/<cluster>.
	Root string
	// Checked counts the znodes looked at, Changed those whose ACL was
	// set (or would be, in a dry run).
	Checked, Changed int
	// Vanished counts znodes that went while it worked (ephemeral
	// entries of a node that stopped): nothing to do for them.
	Vanished int
}

// SetClusterACL sets the ACL that a Conn with opts.Auth and
// opts.ReadACL creates znodes with on every znode of the cluster
// (/<prefix>/<cluster> and everything under it) that does not carry it:
// the migration of a cluster created without a credential. The
// credential must be allowed to change each ACL (the admin permission:
// a world ACL, as a cluster without credential has, or the cluster's
// own). The prefix's znodes above the cluster, which other clusters may
// share, are left as they are. With dryRun it changes nothing and
// reports what it would change. each, if not nil, is called for every
// znode it changes (or would), with its old ACL. Running it twice is
// harmless, and a daemon running meanwhile keeps working: the ACL set
// lets the credential do everything it did.
func SetClusterACL(ctx context.Context, opts Options, dryRun bool, each func(path string, old []zk.ACL)) (SecureReport, error) {
	if opts.Auth.IsZero() {
		return SecureReport{}, errors.New("zktopo: setting the cluster's ACL needs its credential ([zk] auth_file or " + AuthEnv + ")")
	}
	if err := opts.complete(); err != nil {
		return SecureReport{}, err
	}
	a := newACLs(topo.Paths{Prefix: opts.Prefix, Cluster: opts.Cluster}, opts.Auth, opts.ReadACL)
	rep := SecureReport{Root: a.root}
	conn, events, err := zk.Connect(opts.Servers, opts.SessionTimeout,
		zk.WithLogger(&zkLogger{l: opts.Logger.Named("zk").Sugar()}),
		zk.WithLogInfo(false),
		zk.WithHostProvider(&hosts{}),
		zk.WithDialer(func(network, addr string, _ time.Duration) (net.Conn, error) {
			return net.DialTimeout(network, addr, opts.ConnectTimeout)
		}))
	if err != nil {
		return rep, fmt.Errorf("zktopo: connecting to %v: %w", opts.Servers, err)
	}
	defer func() {
		conn.Close()
		for range events {
		}
	}()
	// Every call below waits for a session; ctx bounds the whole run by
	// closing the connection, which ends a call in flight.
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	fail := func(err error) (SecureReport, error) {
		if ctx.Err() != nil {
			return rep, fmt.Errorf("zktopo: setting the cluster's ACL: %w", ctx.Err())
		}
		return rep, fmt.Errorf("zktopo: setting the cluster's ACL: %w", err)
	}
	if err := conn.AddAuth("digest", opts.Auth.authBytes()); err != nil {
		return fail(fmt.Errorf("authenticating: %w", err))
	}
	queue := []string{a.root}
	for len(queue) > 0 {
		if rep.Checked >= maxSecure {
			return fail(fmt.Errorf("more than %d znodes under %s", maxSecure, a.root))
		}
		p := queue[0]
		queue = queue[1:]
		changed, gone, err := setACL(conn, p, a.cluster, dryRun, each)
		if err != nil {
			return fail(err)
		}
		if gone {
			rep.Vanished++
			continue
		}
		rep.Checked++
		if changed {
			rep.Changed++
		}
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fail(refused("listing", p, err))
		}
		for _, k := range sortedCopy(kids) {
			queue = append(queue, p+"/"+k)
		}
	}
	return rep, nil
}

// setACL gives p the ACL want unless it has it, at the ACL version it
// read (so a concurrent change makes it read again). gone: p does not
// exist.
func setACL(conn *zk.Conn, p string, want []zk.ACL, dryRun bool, each func(string, []zk.ACL)) (changed, gone bool, err error) {
	for range maxAttempts {
		have, st, err := conn.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			return false, true, nil
		}
		if err != nil {
			return false, false, refused("reading the ACL of", p, err)
		}
		if sameACL(have, want) {
			return false, false, nil
		}
		if !dryRun {
			_, err = conn.SetACL(p, want, st.Aversion)
			switch {
			case errors.Is(err, zk.ErrBadVersion):
				continue
			case errors.Is(err, zk.ErrNoNode):
				return false, true, nil
			case err != nil:
				return false, false, refused("setting the ACL of", p, err)
			}
		}
		if each != nil {
			each(p, have)
		}
		return true, false, nil
	}
	return false, false, fmt.Errorf("the ACL of %s kept changing under %d attempts to set it", p, maxAttempts)
}
