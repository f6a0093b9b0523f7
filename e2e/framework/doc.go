// Package framework runs spangle's docker-compose cluster for the e2e
// scenarios: it brings a cluster up under its own compose project with a
// bind-mounted source root, publishes versions into it, and kills, stops,
// starts and disconnects its containers through the docker CLI.
package framework
