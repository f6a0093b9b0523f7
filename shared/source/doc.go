// Package source lists and opens the databases, versions and data files of
// a source root: the directory tree <root>/<db>/<version>/<files> that
// Hadoop or Spark jobs write.
//
// The data model rules of docs/design.md live here so that every reader of
// a root agrees on them: db and version names match
// [A-Za-z0-9][A-Za-z0-9_-]*, names starting with '_' or '.' are Hadoop's
// hidden files and are skipped, other names are ignored, the newest
// version is the lexicographically greatest name, and with RequireSuccess
// a version counts only once it holds _SUCCESS. Nothing outside the root
// is ever opened, whatever symlinks inside it point to,
// and a listed data file that cannot be read fails the listing of its
// version (ErrUnreadable) rather than being left out.
//
// Local roots (a path or a file:// URI) are implemented now; Source is an
// interface so that s3:// can come later.
package source
