package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// renamed lists the keys of older routerd files and the keys that replaced
// them, storaged's names for the same settings. A file with an old key
// still loads, so no deployed config breaks, and each old key leaves a
// warning naming its new key. The flags kept their names.
var renamed = []struct{ old, new string }{
	{"zk", "zk.servers"}, // only as a list: the new [zk] is a table
	{"zk_prefix", "zk.prefix"},
	{"zk_session_timeout", "zk.session_timeout"},
	{"cluster", "sharding.cluster_name"},
	{"replication", "sharding.replication"},
	{"min_replication", "sharding.min_replication"},
}

// rename rewrites the old keys of the TOML document data as their new
// ones and returns the document to decode and a warning per old key. A
// document without old keys comes back unchanged, so its errors keep
// their line numbers.
func rename(data string) (string, []string, error) {
	var raw map[string]any
	if _, err := toml.Decode(data, &raw); err != nil {
		return "", nil, err
	}
	var warnings []string
	for _, r := range renamed {
		v, ok := raw[r.old]
		if _, table := v.(map[string]any); !ok || table {
			continue
		}
		section, key, _ := strings.Cut(r.new, ".")
		delete(raw, r.old)
		t, ok := raw[section].(map[string]any)
		if !ok {
			if raw[section] != nil {
				return "", nil, fmt.Errorf("%s is not a table", section)
			}
			t = map[string]any{}
			raw[section] = t
		}
		if _, dup := t[key]; dup {
			return "", nil, fmt.Errorf("both %s and its new name %s are set; keep %s", r.old, r.new, r.new)
		}
		t[key] = v
		warnings = append(warnings, fmt.Sprintf("config: key %s is deprecated; use %s", r.old, r.new))
	}
	if len(warnings) == 0 {
		return data, nil, nil
	}
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(raw); err != nil {
		return "", nil, fmt.Errorf("re-encoding the renamed keys: %w", err)
	}
	return b.String(), warnings, nil
}
