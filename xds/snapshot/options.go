package snapshot

import (
	"time"

	"spangle/shared/wire"
)

// Defaults of Options, chosen to match routerd's own proxying defaults
// (sequins' proxy_timeout and proxy_stage_timeout) and to eject a failing
// storaged quickly without ever ejecting a whole partition's replicas.
const (
	DefaultListenerAddress    = "0.0.0.0"
	DefaultListenerPort       = 10000
	DefaultName               = "spangle"
	DefaultProxyTimeout       = 100 * time.Millisecond
	DefaultProxyStageTimeout  = 50 * time.Millisecond
	DefaultBatchTimeout       = 10 * time.Second
	DefaultConnectTimeout     = 250 * time.Millisecond
	DefaultMaxConnections     = 1024
	DefaultMaxPendingRequests = 1024
	DefaultMaxRequests        = 4096
	DefaultMaxRetries         = 64
	DefaultConsecutive5xx     = 5
	DefaultOutlierInterval    = 5 * time.Second
	DefaultBaseEjectionTime   = 30 * time.Second
	DefaultMaxEjectionPercent = 50
)

// RetriableStatusCodes are the answers after which Envoy asks another
// replica, besides 5xx, resets and connect failures: wire.StatusNotHeld
// (the node does not hold the partition, its registration is stale) and
// wire.StatusVersionGone (it no longer holds the pinned version), as
// routerd does.
var RetriableStatusCodes = []uint32{wire.StatusVersionGone, wire.StatusNotHeld}

// Options shape the generated resources. Zero values mean the defaults
// above; only RouterdAddr is required.
type Options struct {
	// RouterdAddr is routerd's own HTTP host:port. Requests Envoy cannot
	// place (no partition header, unknown db, status pages) go there.
	RouterdAddr string
	// ListenerAddress and ListenerPort are where Envoy listens for
	// lookups.
	ListenerAddress string
	ListenerPort    uint32
	// Name names the listener and the route configuration, and prefixes
	// every cluster (<Name>/<db>/<version>/<partition>, <Name>/routerd).
	Name string
	// ProxyTimeout bounds a whole lookup, retries and hedges included.
	ProxyTimeout time.Duration
	// ProxyStageTimeout is how long one replica gets before Envoy hedges
	// to the next one, without cancelling the first.
	ProxyStageTimeout time.Duration
	// BatchTimeout is routerd's batch_timeout, the longest it waits for
	// a batch's keys; the batch route's timeout follows from it
	// (BatchRouteTimeout).
	BatchTimeout time.Duration
	// ConnectTimeout bounds a connection to a storaged.
	ConnectTimeout time.Duration
	// Circuit breaker limits, per partition cluster.
	MaxConnections, MaxPendingRequests, MaxRequests, MaxRetries uint32
	// Outlier detection: a host that answers Consecutive5xx errors (or
	// fails to connect as often) in a row is ejected for
	// BaseEjectionTime (growing with each ejection), checked every
	// OutlierInterval; at most MaxEjectionPercent of a cluster's hosts
	// are ejected at once.
	Consecutive5xx     uint32
	OutlierInterval    time.Duration
	BaseEjectionTime   time.Duration
	MaxEjectionPercent uint32
	// UpstreamTLS, when not nil, makes Envoy speak mutual TLS to
	// storaged: every partition cluster carries an UpstreamTlsContext.
	UpstreamTLS *UpstreamTLS
}

// UpstreamTLS is what Envoy presents to storaged and checks of it,
// read from files on Envoy's host (the same [tls] files as routerd's,
// re-read by Envoy when they change).
type UpstreamTLS struct {
	// CertFile and KeyFile are Envoy's client certificate; both empty
	// sends none (storaged with client_auth = require then refuses it).
	CertFile, KeyFile string
	// CAFile is the CA storaged's certificates must chain to; required.
	CAFile string
	// PeerNames, when set, are the identities (DNS or URI SANs, '*'
	// wildcards as in [tls] peer_names) a storaged's certificate must
	// carry one of.
	PeerNames []string
}

func (o Options) withDefaults() Options {
	set := func(p *uint32, d uint32) {
		if *p == 0 {
			*p = d
		}
	}
	setD := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	if o.ListenerAddress == "" {
		o.ListenerAddress = DefaultListenerAddress
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	set(&o.ListenerPort, DefaultListenerPort)
	set(&o.MaxConnections, DefaultMaxConnections)
	set(&o.MaxPendingRequests, DefaultMaxPendingRequests)
	set(&o.MaxRequests, DefaultMaxRequests)
	set(&o.MaxRetries, DefaultMaxRetries)
	set(&o.Consecutive5xx, DefaultConsecutive5xx)
	set(&o.MaxEjectionPercent, DefaultMaxEjectionPercent)
	setD(&o.ProxyTimeout, DefaultProxyTimeout)
	setD(&o.ProxyStageTimeout, DefaultProxyStageTimeout)
	setD(&o.BatchTimeout, DefaultBatchTimeout)
	setD(&o.ConnectTimeout, DefaultConnectTimeout)
	setD(&o.OutlierInterval, DefaultOutlierInterval)
	setD(&o.BaseEjectionTime, DefaultBaseEjectionTime)
	return o
}
