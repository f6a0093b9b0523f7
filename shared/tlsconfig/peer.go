package tlsconfig

import (
	"net/http"

	"go.uber.org/zap"
)

// PeerOnly guards the peer endpoints (/_partition/, /_elect/). Over TLS
// with client_auth = require, a client answers only with a certificate
// carrying an identity in peer_names (any certificate the CA verified
// when peer_names is empty); anyone else gets 403, logged once and
// counted. With verify_if_given, a certificate given must pass the same
// check, while a client without one still passes: the migration step
// before require. A nil Source lets every request through.
//
// It reads Request.TLS, which net/http sets for a *tls.Conn and for a
// connection with a ConnectionState method: a server loop of our own
// that hands net/http a TLS connection wrapped (with bytes it read) must
// keep that method, or the connection passes for plaintext
// (TestPeerOnlyWrappedTLS).
func (s *Source) PeerOnly(next http.Handler) http.Handler {
	if s == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := s.peerRefusal(r); reason != "" {
			s.metrics.forbidden.Inc()
			if s.refusals.first("peer endpoint " + reason) {
				s.log.Warn("tls: refused a peer endpoint to a client that is no peer", zap.String("why", reason),
					zap.String("remote", r.RemoteAddr), zap.String("path", r.URL.Path))
			}
			http.Error(w, "forbidden: peers only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// peerRefusal says why r may not use a peer endpoint, "" when it may.
func (s *Source) peerRefusal(r *http.Request) string {
	if r.TLS == nil {
		if s.settings.AcceptPlaintext {
			return "" // a peer not yet restarted with TLS, during a rollout
		}
		return "not over TLS"
	}
	if len(r.TLS.PeerCertificates) == 0 {
		if s.settings.Requires() {
			return "no client certificate"
		}
		return ""
	}
	leaf := r.TLS.PeerCertificates[0]
	if len(s.settings.PeerNames) == 0 || matchAny(s.settings.PeerNames, leaf) {
		return ""
	}
	return "certificate of " + firstIdentity(leaf) + " not in peer_names"
}
