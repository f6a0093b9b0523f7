// Command loadfloor measures the least a load of a SequenceFile version
// into storaged's local store can cost on this machine, part by part,
// beside what storaged's load costs: decoding the files (the decode-only
// yardstick of `make bench`'s load rows), a storaged process's start on an
// empty root, and writing as many bytes as the load's store holds into
// new files, once right after the load's store is freed and once a few
// seconds later. It reads a source root that `spanglebench -uncompressed
// -sections load -keep` left:
//
//	loadfloor -storaged bin/storaged -root /tmp/.../src
//
// Every figure is CPU time (the process's own, or storaged's threads'
// schedstat) and wall time, as medians over the rounds.
package main
