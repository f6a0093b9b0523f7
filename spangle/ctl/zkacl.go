package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"spangle/shared/cliflags"
	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
)

const zkACLUsage = `usage: spangle zk-acl --zk <host:port,...> [--cluster <name>] [--zk-prefix <prefix>]
                      [--zk-auth-file <file>] [--acl-read world|auth] [--dry-run]

Sets the ACL a storaged with this credential creates znodes with on every
znode of the cluster (/<prefix>/<cluster> and below) that does not carry it:
the credential's identity may do everything, anyone else only read (or, with
--acl-read auth, nothing). The credential, user:password, comes from the
environment variable ` + zktopo.AuthEnv + ` if set, else from --zk-auth-file.
`

// ZKACL is the zk-acl command: it reads its flags from args and runs
// zktopo.SetClusterACL. getenv reads the credential's variable. It
// returns the exit code.
func ZKACL(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spangle zk-acl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("zk", "", "ZooKeeper servers host:port,... (required)")
	cluster := fs.String("cluster", "spangle", "the cluster's name ([sharding] cluster_name)")
	prefix := fs.String("zk-prefix", topo.DefaultPrefix, "first element of every znode path ([zk] prefix)")
	authFile := fs.String("zk-auth-file", "", "file holding the credential user:password ([zk] auth_file); "+zktopo.AuthEnv+" wins")
	read := fs.String("acl-read", zktopo.ReadWorld, "who may read: world or auth ([zk] acl_read)")
	dryRun := fs.Bool("dry-run", false, "change nothing; list what would change")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long the command may take")
	fs.Usage = func() {
		fmt.Fprint(stderr, zkACLUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || *servers == "" {
		fmt.Fprintln(stderr, "spangle zk-acl: --zk is required and no arguments are taken")
		fs.Usage()
		return 2
	}
	if err := zktopo.CheckReadACL(*read); err != nil {
		fmt.Fprintln(stderr, "spangle zk-acl:", err)
		return 2
	}
	cred, source, err := zktopo.LoadCredential(*authFile, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "spangle zk-acl:", err)
		return 1
	}
	if cred.IsZero() {
		fmt.Fprintf(stderr, "spangle zk-acl: no credential: set %s or --zk-auth-file\n", zktopo.AuthEnv)
		return 2
	}
	list := cliflags.SplitList(*servers)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	verb := "set"
	if *dryRun {
		verb = "would set"
	}
	fmt.Fprintf(stdout, "credential of user %q from %s\n", cred.User(), source)
	rep, err := zktopo.SetClusterACL(ctx, zktopo.Options{Servers: list, Cluster: *cluster, Prefix: *prefix, Auth: cred, ReadACL: *read}, *dryRun,
		func(path string, old []zk.ACL) {
			fmt.Fprintf(stdout, "%s the ACL of %s (was %s)\n", verb, path, formatACL(old))
		})
	if err != nil {
		fmt.Fprintln(stderr, "spangle zk-acl:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d znodes checked, %s the ACL of %d\n", rep.Root, rep.Checked, verb, rep.Changed)
	return 0
}

// formatACL writes an ACL as zkCli's getAcl does: scheme:id:perms.
func formatACL(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, e := range acl {
		perms := ""
		for _, p := range []struct {
			bit int32
			c   string
		}{{zk.PermCreate, "c"}, {zk.PermDelete, "d"}, {zk.PermRead, "r"}, {zk.PermWrite, "w"}, {zk.PermAdmin, "a"}} {
			if e.Perms&p.bit != 0 {
				perms += p.c
			}
		}
		parts[i] = e.Scheme + ":" + e.ID + ":" + perms
	}
	return strings.Join(parts, ", ")
}
