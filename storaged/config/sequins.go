package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Notice is a key of the config file that storaged read otherwise than
// its name says: a sequins key mapped to spangle's name, a key another
// daemon owns now, or a key accepted and ignored. The daemon logs each
// as a warning once it has a logger. A Notice names keys, never values:
// some of the keys it names hold secrets.
type Notice struct {
	// Key is the key as the file wrote it (section.key).
	Key string
	// Use is the key that replaced it, when there is one.
	Use string
	// Why says what storaged does instead.
	Why string
}

// String is the notice as one line, for a terminal.
func (n Notice) String() string {
	if n.Use != "" {
		return fmt.Sprintf("%s: read as %s (%s)", n.Key, n.Use, n.Why)
	}
	return fmt.Sprintf("%s: ignored (%s)", n.Key, n.Why)
}

// sequinsKey is one key of sequins' configuration reference that
// storaged does not read under its own name. The keys sequins and
// spangle share (source, bind, local_store, [sharding], [zk], [s3]
// region, [debug] bind...) are plain fields of Config and need no entry.
type sequinsKey struct {
	key string // as md.Undecoded names it; "test." covers the section
	use string // the key that replaced it, if any (then its value is read as that key's)
	why string
}

// sequinsKeys lists every key sequins read (its config.go, over its
// releases) that storaged's Config has no field of that name for.
var sequinsKeys = []sequinsKey{
	{"root", "source", "sequins' name before source"},
	{"storage.compression", "leveldb.compression", "storaged's tables are configured under [leveldb]"},
	{"storage.block_size", "leveldb.block_size", "storaged's tables are configured under [leveldb]"},
	// Releases before [sharding] kept these under [zk].
	{"zk.replication", "sharding.replication", "cluster settings are under [sharding]"},
	{"zk.time_to_converge", "sharding.time_to_converge", "cluster settings are under [sharding]"},
	{"zk.cluster_name", "sharding.cluster_name", "cluster settings are under [sharding]"},
	{"zk.advertised_hostname", "sharding.advertised_hostname", "cluster settings are under [sharding]"},
	{"zk.shard_id", "sharding.shard_id", "cluster settings are under [sharding]"},

	{"sharding.proxy_timeout", "", "storaged does not proxy lookups: routerd does; set proxy_timeout in routerd's config"},
	{"sharding.proxy_stage_timeout", "", "storaged does not proxy lookups: routerd does; set proxy_stage_timeout in routerd's config"},
	{"zk.proxy_timeout", "", "storaged does not proxy lookups: routerd does; set proxy_timeout in routerd's config"},
	{"throttle_loads", "", "storaged does not sleep between writes; bound a load's I/O with max_parallel_loads"},
	{"write_buffer_size", "", "a load's buffer is leveldb.spill_size"},
	{"max_download_bandwidth_mb_per_second", "", "storaged does not cap its download rate; bound loads with max_parallel_loads"},
	{"goforit_flag_json_path", "", "spangle has no feature flags"},
	{"s3.access_key_id", "", "S3 credentials come from the AWS chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, web identity or the instance role"},
	{"s3.secret_access_key", "", "S3 credentials come from the AWS chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, web identity or the instance role"},
	{"s3.max_retries", "", "the AWS SDK retries each request, and a dropped read resumes with a ranged GET"},
	{"datadog.url", "", "storaged exports Prometheus metrics on /metrics instead of sending to Datadog"},
	{"debug.request_log_enable", "", "storaged writes no request log; requests are counted by status in /metrics"},
	{"debug.request_log_file", "", "storaged writes no request log; requests are counted by status in /metrics"},
	{"test.", "", "sequins' own functional-test settings"},
}

func findSequinsKey(key string) (sequinsKey, bool) {
	for _, k := range sequinsKeys {
		if k.key == key || (strings.HasSuffix(k.key, ".") && strings.HasPrefix(key, k.key)) {
			return k, true
		}
	}
	return sequinsKey{}, false
}

// sequinsSection reports whether name is a section some sequins key is in.
func sequinsSection(name string) bool {
	for _, k := range sequinsKeys {
		if strings.HasPrefix(k.key, name+".") {
			return true
		}
	}
	return false
}

// sequinsValues holds the values of the mapped keys, decoded from the
// same document.
type sequinsValues struct {
	Root    string `toml:"root"`
	Storage struct {
		Compression string `toml:"compression"`
		BlockSize   int    `toml:"block_size"`
	} `toml:"storage"`
	ZK struct {
		Replication        int           `toml:"replication"`
		TimeToConverge     time.Duration `toml:"time_to_converge"`
		ClusterName        string        `toml:"cluster_name"`
		AdvertisedHostname string        `toml:"advertised_hostname"`
		ShardID            string        `toml:"shard_id"`
	} `toml:"zk"`
}

// sequinsMapped returns where each mapped key's value goes.
func sequinsMapped(v *sequinsValues, c *Config) map[string]func() {
	return map[string]func(){
		"root":                   func() { c.Source = v.Root },
		"storage.compression":    func() { c.LevelDB.Compression = v.Storage.Compression },
		"storage.block_size":     func() { c.LevelDB.BlockSize = v.Storage.BlockSize },
		"zk.replication":         func() { c.Sharding.Replication = v.ZK.Replication },
		"zk.time_to_converge":    func() { c.Sharding.TimeToConverge = v.ZK.TimeToConverge },
		"zk.cluster_name":        func() { c.Sharding.ClusterName = v.ZK.ClusterName },
		"zk.advertised_hostname": func() { c.Sharding.AdvertisedHostname = v.ZK.AdvertisedHostname },
		"zk.shard_id":            func() { c.Sharding.ShardID = v.ZK.ShardID },
	}
}

// sequinsKeysIn reads the keys of data that Config does not hold (und,
// as toml's MetaData.Undecoded names them): a key of sequins' is mapped
// or ignored with a Notice, any other key is an error naming it.
func sequinsKeysIn(data string, md toml.MetaData, und []toml.Key, c *Config) error {
	var unknown []string
	var v sequinsValues
	var decoded bool
	for _, k := range und {
		name := k.String()
		if md.Type(k...) == "Hash" {
			if _, ok := findSequinsKey(name + ".x"); ok || sequinsSection(name) {
				continue // a table of sequins': its keys follow
			}
		}
		sk, ok := findSequinsKey(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if sk.use == "" {
			c.Notices = append(c.Notices, Notice{Key: name, Why: sk.why})
			continue
		}
		if md.IsDefined(strings.Split(sk.use, ".")...) {
			return fmt.Errorf("config: both %s and its new name %s are set; keep %s", name, sk.use, sk.use)
		}
		if !decoded {
			if _, err := toml.Decode(data, &v); err != nil {
				return fmt.Errorf("config: %s: %w", name, err)
			}
			decoded = true
		}
		sequinsMapped(&v, c)[name]()
		c.Notices = append(c.Notices, Notice{Key: name, Use: sk.use, Why: sk.why})
	}
	if len(unknown) > 0 {
		return fmt.Errorf("config: unknown key %s", strings.Join(unknown, ", "))
	}
	// sequins ran standalone unless [sharding] enabled was true, whatever
	// [zk] said; an explicit false wins over [zk] servers here too.
	if md.IsDefined("sharding", "enabled") && !c.Sharding.Enabled && md.IsDefined("zk") {
		c.ZK.Servers = nil
		c.Notices = append(c.Notices, Notice{Key: "zk", Why: "sharding.enabled = false: storaged runs standalone"})
	}
	return nil
}
