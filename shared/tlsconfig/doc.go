// Package tlsconfig builds the *tls.Config of every spangle listener and
// client from one [tls] section (cert_file, key_file, ca_file,
// client_auth, peer_names, app_tls), and rotates the certificate, key and
// CA without a restart.
//
// A Source holds the current set (certificate with its key, and the CA
// pool) behind an atomic pointer. The configs it hands out never change;
// their callbacks (GetCertificate, GetClientCertificate, VerifyConnection)
// read the pointer at every handshake, so a swap takes effect on the next
// connection while established keep-alive connections go on. Run polls
// the files; a changed set is checked in full (the key matches the
// certificate, the certificate is within its validity and chains to the
// CA, the CA parses) before it replaces the old one. A bad set is
// refused, logged and counted, and the old one keeps serving. At New, a
// missing, mismatched or expired file is an error naming it.
//
// Peer certificates are verified by the package's own code against the
// current pool, because crypto/tls fixes RootCAs and ClientCAs for the
// life of a config: the client config sets InsecureSkipVerify only to
// hand verification to VerifyConnection, which checks the chain and that
// the server's certificate is valid for the address dialled or carries an
// identity in peer_names. Handshakes it refuses are logged once per
// address and counted.
//
// Identities are a certificate's DNS and URI (SPIFFE) SANs; a peer_names
// pattern may hold '*', which matches one or more characters other than
// '.' and '/' (one DNS label, one path segment).
//
// Listen wraps a daemon's listener: TLS, or with accept_plaintext (a
// rollout step) TLS and plaintext on one port, told apart by the first
// byte of each connection, sniffed off the Accept path so that a silent
// client holds up no one. Each *tls.Conn it makes reads through a
// transport that its server loop can tell not to wait for the network
// (ReceivedOnly): shared/h1fast so reads the records crypto/tls already
// holds without moving the read deadline.
//
// A nil *Source is plaintext: its configs are nil, Listen returns the
// listener as it is and PeerOnly lets every request through. A Source is
// safe for concurrent use.
package tlsconfig
