// Package dataset writes the generated databases the compose cluster and
// the e2e scenarios serve, and says what each key's value must be, so a
// reader can check every answer against the version it names.
package dataset
