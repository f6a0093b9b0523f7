// Package zktest runs a real ZooKeeper server for tests: Debian's
// zookeeper package (java and /usr/share/java/zookeeper.jar), standalone,
// on a free loopback port, with its data and logs in the test's temporary
// directory. It can stop and restart the server on the same port and data
// directory, so that tests can cause real outages, and it offers a TCP
// proxy that can cut one client off, so that tests can cause a real
// session expiry. StartWith can give the server a digest superuser
// (Options.Super), and RawAuth connects a client with a digest
// credential, for tests of ZooKeeper ACLs.
//
// A missing java or jar fails the test with a message naming
// `apt-get install zookeeper`; it never skips.
package zktest
