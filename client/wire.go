package client

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// The parts of spangle's HTTP contract (docs/design.md) the client
// speaks. They are the server's shared/wire values, copied so that this
// module depends on nothing of the server's; the tests in the server's
// clienttest package run this client against the real daemons, so that a
// change on one side that the other misses fails there.
const (
	// headerVersion pins a request to a version and, on an answer, names
	// the version answered from (sequins' name).
	headerVersion = "X-Sequins-Version"
	// defaultBatchMaxKeys and defaultBatchMaxBytes are the daemons'
	// default bounds of a batch lookup (413 above them).
	defaultBatchMaxKeys  = 1000
	defaultBatchMaxBytes = 1 << 20
)

// keyPath is the path of a key lookup: /<db>/<key escaped>.
func keyPath(db string, key []byte) string {
	return "/" + db + "/" + url.PathEscape(string(key))
}

// batchAnswer is the JSON answer of a batch lookup (POST /<db>).
type batchAnswer struct {
	Version string            `json:"version"`
	Found   map[string][]byte `json:"found"`
	Missing []string          `json:"missing"`
	Failed  map[string]string `json:"failed"`
}

func decodeBatchAnswer(b []byte) (*batchAnswer, error) {
	var a batchAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("client: decoding batch answer: %w", err)
	}
	return &a, nil
}

// failStatus reads the status a failed key's reason starts with ("503
// overloaded"); 0 if it has none.
func failStatus(reason string) int {
	if len(reason) < 3 {
		return 0
	}
	n, err := strconv.Atoi(reason[:3])
	if err != nil || n < 100 || (len(reason) > 3 && reason[3] != ' ') {
		return 0
	}
	return n
}
