// Package dbver names a version of a database (Version) and one
// partition of it (Partition): the small comparable keys that the
// topology, both daemons and their helpers use in maps and signatures
// instead of passing a db, a version and a partition number apart.
//
// It holds names only; whether a name is valid is topo.CheckVersion's
// and topo.CheckReplica's to say.
package dbver
