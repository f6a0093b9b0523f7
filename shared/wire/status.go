package wire

import (
	"errors"
	"net/http"
)

// Status codes with a meaning of their own in the contract, beyond
// HTTP's. storaged answers them, routerd reads them back to decide
// whether another replica may answer, and Envoy (through xds) retries on
// them; each program names them here rather than by number.
const (
	// StatusVersionGone (410): the version the request pinned is not held
	// (never was, or no longer is). X-Sequins-Version is set iff the
	// answering node knows the db, to the version it serves unpinned: a
	// 410 without it says the db itself is unknown there. Another replica
	// may still hold the version. routerd answers it only to a request
	// that pinned a version.
	StatusVersionGone = http.StatusGone
	// StatusNotHeld (421, storaged only): this node holds the version but
	// not the key's partition; its registration is stale. Another replica
	// may hold it: ask the next one.
	StatusNotHeld = http.StatusMisdirectedRequest
	// StatusUnavailable (503): this node cannot answer the key now, with
	// Retry-After saying when to come back: it sheds load, or the key's
	// block failed its checksum and the partition is being rebuilt.
	// Another replica may answer: routerd asks the next one at once.
	StatusUnavailable = http.StatusServiceUnavailable
	// StatusNoReplica (502, routerd only): no replica of the key's
	// partition could be reached, or none holds it.
	StatusNoReplica = http.StatusBadGateway
	// StatusTimeout (504, routerd only): every replica tried timed out.
	StatusTimeout = http.StatusGatewayTimeout
)

// StatusOf maps an error of ParsePath to the status and the plain message
// both daemons answer with: 414 for a key over MaxKeyLen, 400 for an
// empty key or any other bad path. The message never echoes the error's
// text, which names the package and the input.
func StatusOf(err error) (code int, msg string) {
	switch {
	case errors.Is(err, ErrKeyTooLong):
		return http.StatusRequestURITooLong, "key too long"
	case errors.Is(err, ErrEmptyKey):
		return http.StatusBadRequest, "empty key"
	default:
		return http.StatusBadRequest, "bad path"
	}
}
