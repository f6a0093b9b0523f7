// Package topotest is the behaviour suite every topo backend passes:
// memtopo in its unit tests, zktopo against a real ZooKeeper. A backend
// hands Run the ways to open clients and to cause its faults (an outage
// of the whole service, one session lost), and the suite checks what a
// storaged and a router rely on.
package topotest
