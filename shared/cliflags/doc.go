// Package cliflags holds what the three spangle commands' command lines
// share: the flags-over-file parse (Parse), the exit on a usage error, a
// usage text that shows each flag's real default and hides the
// flags meant for tests, and the --version sentinel.
package cliflags
