package daemon

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"spangle/shared/topo"
	"spangle/shared/topo/zktopo"
	"spangle/storaged/config"
)

// dialZK starts a ZooKeeper session as cfg.ZK and cfg.Sharding say. It
// returns at once: the session comes up in the background, and until it
// does the cluster controller waits and nothing new is adopted. The
// credential, if any, comes from SPANGLE_ZK_AUTH or [zk] auth_file; only
// where it came from and its user are logged.
func dialZK(cfg config.Config, log *zap.Logger, reg prometheus.Registerer) (topo.Conn, error) {
	cred, err := zkCredential(cfg.ZK.AuthFile, cfg.ZK.ACLRead, log)
	if err != nil {
		return nil, err
	}
	conn, err := zktopo.Open(zktopo.Options{
		Servers: cfg.ZK.Servers, Cluster: cfg.Sharding.ClusterName, Prefix: cfg.ZK.Prefix,
		SessionTimeout: cfg.ZK.SessionTimeout, ConnectTimeout: cfg.ZK.ConnectTimeout, Logger: log.Named("zk"),
		Registerer: reg, Auth: cred, ReadACL: cfg.ZK.ACLRead,
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return conn, nil
}

// zkCredential loads the ZooKeeper credential and says where from.
func zkCredential(file, aclRead string, log *zap.Logger) (zktopo.Credential, error) {
	cred, source, err := zktopo.LoadCredential(file, os.Getenv)
	if err != nil {
		return zktopo.Credential{}, fmt.Errorf("daemon: %w", err)
	}
	if cred.IsZero() {
		if aclRead == zktopo.ReadAuth {
			log.Warn("zk.acl_read = auth needs a credential ([zk] auth_file or " + zktopo.AuthEnv + "); without one the znodes are open to every client")
		}
		return cred, nil
	}
	log.Info("ZooKeeper credential loaded", zap.String("from", source), zap.String("user", cred.User()), zap.String("acl_read", aclRead))
	return cred, nil
}
