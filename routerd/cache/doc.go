// Package cache is routerd's hot-key cache: an LRU (hashicorp/golang-lru)
// bounded in bytes, keyed by (db, version, key), holding positive and
// negative answers alike, with concurrent misses for one key collapsed
// into one fill (golang.org/x/sync/singleflight).
//
// The version is part of the key, and callers look up the version they
// serve, so a value of another version can never be returned; entries of
// versions no longer served simply age out.
package cache
