package tlsconfig

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Source's counters and its expiry gauge.
type metrics struct {
	reloads   *prometheus.CounterVec
	refused   *prometheus.CounterVec
	forbidden prometheus.Counter
	// handshakes by whose certificate was verified (client, server) and
	// whether a session was resumed: [peer][resumed].
	handshakes [2][2]prometheus.Counter
}

// Indexes of metrics.handshakes.
const (
	peerClient = 0
	peerServer = 1
)

func newMetrics(reg prometheus.Registerer, s *Source) (*metrics, error) {
	m := &metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_tls_reloads_total",
			Help: "Changed certificate sets seen in the files, by result: ok (swapped in) or refused (invalid; the old set keeps serving).",
		}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spangle_tls_handshakes_refused_total",
			Help: "TLS handshakes refused because the other side's certificate failed verification, by whose: client or server.",
		}, []string{"peer"}),
		forbidden: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "spangle_tls_peer_endpoint_forbidden_total",
			Help: "Requests to the peer endpoints (/_partition/, /_elect/) refused with 403: the client is no peer.",
		}),
	}
	hs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spangle_tls_handshakes_total",
		Help: "TLS handshakes completed, by whose certificate was verified (client: this side served; server: this side dialled) and whether a session was resumed.",
	}, []string{"peer", "resumed"})
	for i, peer := range []string{"client", "server"} {
		for j, resumed := range []string{"false", "true"} {
			m.handshakes[i][j] = hs.WithLabelValues(peer, resumed)
		}
	}
	if reg == nil {
		return m, nil
	}
	expiry := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "spangle_tls_cert_expiry_timestamp_seconds",
		Help: "When the certificate served now expires (Unix time); 0 without one.",
	}, func() float64 {
		t := s.NotAfter()
		if t.IsZero() {
			return 0
		}
		return float64(t.Unix())
	})
	for _, c := range []prometheus.Collector{m.reloads, m.refused, m.forbidden, hs, expiry} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("tlsconfig: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}

// handshake counts one handshake whose peer (peerClient, peerServer)
// was accepted.
func (m *metrics) handshake(peer int, resumed bool) {
	r := 0
	if resumed {
		r = 1
	}
	m.handshakes[peer][r].Inc()
}
