// Package store keeps loaded versions on local disk: one directory per
// partition per version, under <local_store>/<db>/<version>/p-<partition>/,
// with a manifest saying which source files the version was built from and
// whether the build finished. It lists the versions present and removes
// them, and keeps the node's identity (<local_store>/node-id).
//
// "Manifest" here means spangle's own record of a version,
// spangle-version.json beside the partition directories. What fills a
// partition directory, an ordinary LevelDB database, is package table's:
// its LevelDB MANIFEST file is the table package's "descriptor", and this
// package neither reads nor writes it.
//
// The local store is a cache: a version whose manifest is complete and
// matches the source is reused after a restart; anything else in the store
// is discarded.
package store
