// Package config is routerd's configuration: the defaults, the command
// line flags, and a TOML file (--config) with the same keys, flags
// winning over the file. The ZooKeeper and sharding settings have
// storaged's keys ([zk] servers, [sharding] cluster_name, ...); the older
// keys still load and are reported in Config.Deprecated. It holds no state; Parse builds a fresh flag set
// each time so that tests can call it freely.
package config
