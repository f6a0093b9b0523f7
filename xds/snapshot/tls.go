package snapshot

import (
	"fmt"
	"regexp"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// TLSTransportSocket is the name Envoy knows its TLS transport socket by.
const TLSTransportSocket = "envoy.transport_sockets.tls"

// upstreamTransport is the transport socket of a partition cluster with
// TLS: Envoy presents the client certificate and verifies storaged's
// against the CA (and, with peer names, its SANs).
func upstreamTransport(t *UpstreamTLS) (*corev3.TransportSocket, error) {
	if t.CAFile == "" {
		return nil, fmt.Errorf("snapshot: upstream TLS needs a CA file")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("snapshot: upstream TLS: a certificate file and a key file go together")
	}
	vc := &tlsv3.CertificateValidationContext{
		TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: t.CAFile}},
	}
	for _, p := range t.PeerNames {
		typ := tlsv3.SubjectAltNameMatcher_DNS
		if strings.Contains(p, "://") {
			typ = tlsv3.SubjectAltNameMatcher_URI
		}
		vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, &tlsv3.SubjectAltNameMatcher{
			SanType: typ,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{
				SafeRegex: &matcherv3.RegexMatcher{Regex: patternRegex(p)},
			}},
		})
	}
	common := &tlsv3.CommonTlsContext{
		TlsParams:             &tlsv3.TlsParameters{TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2},
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc},
	}
	if t.CertFile != "" {
		common.TlsCertificates = []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: t.CertFile}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: t.KeyFile}},
		}}
	}
	ctx := &tlsv3.UpstreamTlsContext{CommonTlsContext: common}
	if err := ctx.ValidateAll(); err != nil {
		return nil, fmt.Errorf("snapshot: upstream TLS: %w", err)
	}
	a, err := anypb.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &corev3.TransportSocket{Name: TLSTransportSocket, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: a}}, nil
}

// patternRegex is the RE2 expression of a peer_names pattern: '*' is
// one or more characters other than '.' and '/', the rest literal; case
// folded as tlsconfig.MatchName does.
func patternRegex(p string) string {
	parts := strings.Split(p, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return "(?i)" + strings.Join(parts, "[^./]+")
}
