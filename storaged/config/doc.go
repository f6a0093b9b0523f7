// Package config is storaged's configuration: a TOML file with sequins'
// key names, overridden by command-line flags, validated at start so that
// an unknown key or a bad value stops the daemon with the key named.
package config
