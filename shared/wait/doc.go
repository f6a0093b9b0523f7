// Package wait holds the one way spangle's background loops pause: a sleep
// that ends early when its context does, so that cancelling a daemon's
// context stops a loop between rounds without waiting out its interval;
// and, on that sleep, the one way code polls a condition (Poll).
package wait
