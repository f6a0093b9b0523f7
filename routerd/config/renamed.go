package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Renamed is an older key a file used and the key that replaced it.
type Renamed struct {
	Old, New string
}

// renamed lists the keys of older routerd files and the keys that replaced
// them, storaged's names for the same settings. A file with an old key
// still loads, so no deployed config breaks, and each old key is reported
// with its new name so that the daemon can warn. The flags kept their
// names.
var renamed = []Renamed{
	{"zk", "zk.servers"}, // only as a list: the new [zk] is a table
	{"zk_prefix", "zk.prefix"},
	{"zk_session_timeout", "zk.session_timeout"},
	{"cluster", "sharding.cluster_name"},
	{"replication", "sharding.replication"},
	{"min_replication", "sharding.min_replication"},
}

// rename rewrites the old keys of the TOML document data as their new
// ones and returns the document to decode and the keys it renamed. A
// document without old keys comes back unchanged, so its errors keep
// their line numbers.
func rename(data string) (string, []Renamed, error) {
	var raw map[string]any
	if _, err := toml.Decode(data, &raw); err != nil {
		return "", nil, err
	}
	var done []Renamed
	for _, r := range renamed {
		v, ok := raw[r.Old]
		if _, table := v.(map[string]any); !ok || table {
			continue
		}
		section, key, _ := strings.Cut(r.New, ".")
		delete(raw, r.Old)
		t, ok := raw[section].(map[string]any)
		if !ok {
			if raw[section] != nil {
				return "", nil, fmt.Errorf("%s is not a table", section)
			}
			t = map[string]any{}
			raw[section] = t
		}
		if _, dup := t[key]; dup {
			return "", nil, fmt.Errorf("both %s and its new name %s are set; keep %s", r.Old, r.New, r.New)
		}
		t[key] = v
		done = append(done, r)
	}
	if len(done) == 0 {
		return data, nil, nil
	}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(raw); err != nil {
		return "", nil, fmt.Errorf("re-encoding the renamed keys: %w", err)
	}
	return b.String(), done, nil
}
