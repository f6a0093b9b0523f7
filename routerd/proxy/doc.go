// Package proxy is routerd's request path to storaged: given the replicas
// of a key's partition, it picks one (health.Pick), starts another in
// parallel every stage timeout while the hedge budget allows, fails over
// at once on errors and load shedding, returns the first answer and
// cancels the rest.
//
// The network is behind the Upstream interface: HTTPUpstream is the real
// one, and tests script replica behaviour through their own. Proxy never
// builds a URL from anything but a registered node address and the
// escaped key (wire.KeyPath), or the db of a batch lookup (Request.Keys,
// POST /<db>), so routerd cannot be made an open proxy.
package proxy
