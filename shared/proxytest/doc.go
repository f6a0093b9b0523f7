// Package proxytest is a loopback TCP proxy for tests that need a real
// network fault between a client and a real server: it can drop every
// connection and refuse new ones (Cut, Heal), cut each connection after a
// number of bytes from the server (CutAfter), and call a function once a
// number of bytes have passed (AfterBytes). zktest puts it in front of
// ZooKeeper to expire one client's session; s3test puts it in front of S3
// to break downloads mid-object.
package proxytest
