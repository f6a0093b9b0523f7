package zktopo

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
)

// authRetry is how soon a failed AddAuth is tried again.
const authRetry = time.Second

// deniedRetry is how soon what an ACL refused is published again, so
// that a credential or ACL fixed meanwhile needs no restart.
const deniedRetry = 10 * time.Second

// maxAudit bounds the znodes the start-up ACL check looks at.
const maxAudit = 20000

// authLoop gives the client the credential. The client sends it again
// by itself, before any other request, on every later connection and
// session (go-zookeeper's resendZkAuth), so this succeeds once; until it
// does, the Conn counts as not connected and sends nothing else. Then it
// checks once that the cluster's znodes are not open to every client.
func (c *Conn) authLoop() {
	defer c.wg.Done()
	for {
		err := c.zk.AddAuth("digest", c.auth.authBytes())
		if err == nil {
			break
		}
		select {
		case <-c.closed:
			return
		default:
		}
		if !isConnErr(err) {
			// Not the secret: errors of AddAuth never hold it.
			c.log.Warn("zktopo: ZooKeeper did not accept the credential; trying again", zap.String("user", c.auth.User()), zap.Error(err))
		}
		select {
		case <-c.closed:
			return
		case <-time.After(authRetry):
		}
	}
	c.authed.Store(true)
	c.log.Info("zktopo: authenticated", zap.String("scheme", "digest"), zap.String("user", c.auth.User()))
	kick(c.watchKick)
	kick(c.syncKick)
	c.auditACLs()
}

// denials says the ACL refusals of a Conn and has them tried again.
type denials struct {
	said    atomic.Bool // a refusal was logged at Error
	pending atomic.Bool // a retry is scheduled
}

// noteDenied logs an ACL refusal (err names the znode), the first at
// Error and the rest at Debug, and publishes everything again after
// deniedRetry.
func (c *Conn) noteDenied(err error) {
	if !c.denied.said.Swap(true) {
		c.log.Error("zktopo: ZooKeeper's ACL refused this client; what it refused is tried again every "+deniedRetry.String(), zap.Error(err))
	} else {
		c.log.Debug("zktopo: ZooKeeper's ACL refused this client", zap.Error(err))
	}
	if c.denied.pending.Swap(true) {
		return
	}
	time.AfterFunc(deniedRetry, func() {
		c.denied.pending.Store(false)
		kick(c.syncKick)
	})
}

// auditACLs looks at the ACL of the cluster's znodes (the first
// maxAudit) and warns once if any lets every client change it, or, with
// ReadAuth, read it: znodes created before the credential was set, or by
// hand. `spangle zk-acl` sets the cluster's ACL on them.
func (c *Conn) auditACLs() {
	var open, readable, checked int
	var example string
	queue := []string{c.acl.root}
	for len(queue) > 0 && checked < maxAudit {
		select {
		case <-c.closed:
			return
		default:
		}
		p := queue[0]
		queue = queue[1:]
		acl, st, err := c.zk.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			if !isConnErr(err) {
				c.log.Info("zktopo: checking the cluster's ACLs", zap.String("path", p), zap.Error(err))
			}
			return
		}
		checked++
		w := worldPerms(acl)
		if w&writePerms != 0 {
			open++
			if example == "" {
				example = p
			}
		}
		if c.acl.readAuth && w&zk.PermRead != 0 {
			readable++
			if example == "" {
				example = p
			}
		}
		if st.NumChildren == 0 {
			continue
		}
		kids, _, err := c.zk.Children(p)
		if err != nil {
			if !isConnErr(err) && !errors.Is(err, zk.ErrNoNode) {
				c.log.Info("zktopo: checking the cluster's ACLs", zap.String("path", p), zap.Error(err))
			}
			continue
		}
		for _, k := range sortedCopy(kids) {
			queue = append(queue, p+"/"+k)
		}
	}
	if checked == 0 {
		return // a new cluster: everything will be created with the ACL
	}
	if open+readable == 0 {
		c.log.Info("zktopo: the cluster's znodes carry its ACL", zap.String("root", c.acl.root), zap.Int("checked", checked))
		return
	}
	c.log.Warn("zktopo: znodes of the cluster are open to every ZooKeeper client (a world ACL); "+
		"run `spangle zk-acl` with the cluster's credential to set its ACL on them "+
		"(docs/configuration.md, \"ZooKeeper credentials and ACLs\")",
		zap.String("root", c.acl.root), zap.Int("world_writable", open), zap.Int("world_readable", readable),
		zap.String("example", example), zap.Int("checked", checked))
}
