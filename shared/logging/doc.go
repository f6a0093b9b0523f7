// Package logging starts the zap logger a spangle daemon runs with, so
// that storaged and routerd begin logging the same way: zap's production
// configuration (JSON to stderr) at the level named by their log_level
// setting. Only a main calls it; every other package is handed the logger.
package logging
