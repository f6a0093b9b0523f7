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
	// sequins' names: its proxy settings, routerd's now.
	{"sharding.proxy_timeout", "proxy_timeout"},
	{"sharding.proxy_stage_timeout", "proxy_stage_timeout"},
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
		from, fromKey, err := table(raw, r.Old, false)
		if err != nil || from == nil {
			continue
		}
		v, ok := from[fromKey]
		if _, isTable := v.(map[string]any); !ok || isTable {
			continue
		}
		delete(from, fromKey) // first: the old zk list makes way for the [zk] table
		to, toKey, err := table(raw, r.New, true)
		if err != nil {
			return "", nil, err
		}
		if _, dup := to[toKey]; dup {
			return "", nil, fmt.Errorf("both %s and its new name %s are set; keep %s", r.Old, r.New, r.New)
		}
		to[toKey] = v
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

// table returns the table of raw that holds the dotted key (raw itself
// for a key without a section) and the key's last element; with create,
// a missing section is added.
func table(raw map[string]any, key string, create bool) (map[string]any, string, error) {
	section, name, dotted := strings.Cut(key, ".")
	if !dotted {
		return raw, key, nil
	}
	t, ok := raw[section].(map[string]any)
	if !ok {
		if raw[section] != nil {
			return nil, "", fmt.Errorf("%s is not a table", section)
		}
		if !create {
			return nil, name, nil
		}
		t = map[string]any{}
		raw[section] = t
	}
	return t, name, nil
}
