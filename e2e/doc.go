// Package e2e holds spangle's end-to-end scenarios (build tag e2e): a
// docker-compose cluster of ZooKeeper, three storaged and one routerd,
// driven through the docker CLI while readers read through routerd.
// `make e2e` builds the images and runs them; see e2e/README.md.
package e2e
