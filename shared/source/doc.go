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
// Two kinds of root implement Source and pass one suite (sourcetest):
// local roots (a path or a file:// URI) and S3 roots (s3://bucket/prefix,
// any S3-compatible store). On S3 the "directories" are key prefixes,
// listed page by page with "/" as delimiter; the empty marker objects some
// tools write ("db/v1/", "*_$folder$") are not data. An object is streamed,
// never held whole in memory; a connection dropped mid-object resumes with
// a ranged GET pinned to the ETag first seen, so a changed object fails the
// read (ErrChanged) instead of mixing two contents.
package source
