// Package load is the benchmark's one load generator, used for every
// contender alike: a minimal HTTP/1.1 keep-alive client on raw
// connections (so it takes as little of the shared CPUs as it can), run
// either closed-loop at a fixed concurrency to find a server's maximum
// throughput, or open-loop at a fixed rate to measure latency without
// coordinated omission. Warm-up requests are excluded from the figures.
package load
