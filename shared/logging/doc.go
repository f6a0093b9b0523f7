// Package logging starts the zap logger a spangle daemon runs with, so
// that storaged and routerd begin logging the same way: zap's production
// configuration at the level named by their log_level setting, as JSON
// (one object a line, for collectors) or, with log_format = "console", as
// aligned text for people reading a terminal. No entry carries a Go stack
// trace: spangle's errors (a bad _PIN, a corrupt file, a missing source
// root) are the operator's to read, and their messages say what and where.
// Only a main calls it; every other package is handed the logger.
package logging
