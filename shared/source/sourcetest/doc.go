// Package sourcetest is the behaviour suite every kind of source root
// passes: a local directory, and an S3 bucket served by a real versitygw.
// The suite writes its fixtures as plain files into a directory that the
// backend hands it (versitygw's posix backend serves such a directory in
// place), so both kinds see the same tree and must list and read it the
// same way.
package sourcetest
