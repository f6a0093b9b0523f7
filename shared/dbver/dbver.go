package dbver

import "strconv"

// Version is one version of one database.
type Version struct {
	DB      string
	Version string
}

// Of returns the version of db named version.
func Of(db, version string) Version { return Version{DB: db, Version: version} }

// Partition returns partition p of v.
func (v Version) Partition(p int) Partition {
	return Partition{DB: v.DB, Version: v.Version, P: p}
}

// String returns "db/version", as spangle names a version in paths and logs.
func (v Version) String() string { return v.DB + "/" + v.Version }

// Partition is partition P of one version of one database.
type Partition struct {
	DB      string
	Version string
	P       int
}

// Of returns the version p is a partition of.
func (p Partition) Of() Version { return Version{DB: p.DB, Version: p.Version} }

// String returns "db/version/p".
func (p Partition) String() string { return p.DB + "/" + p.Version + "/" + strconv.Itoa(p.P) }
