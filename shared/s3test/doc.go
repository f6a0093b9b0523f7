// Package s3test runs a real S3 server for tests: versitygw, pinned in
// tools/versitygw and built by `make deps`, with its posix backend serving
// a temporary directory in place on a free loopback port. Each top-level
// directory of Dir is a bucket and each file below it an object, so
// fixtures are plain files. The server can be stopped and restarted on the
// same port, and a proxytest.Proxy in front of it refuses connections or
// cuts them after a given number of bytes, so that tests cause real
// outages and real dropped downloads.
//
// A missing versitygw fails the test with a message naming `make deps`;
// it never skips.
package s3test
