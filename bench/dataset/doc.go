// Package dataset writes the benchmark's source root with the project's
// own SequenceFile writer: N keys with fixed-size values, in files that a
// Hadoop job with one reducer per partition would have written (each file
// holds one partition's keys in key order), and reads it back record by
// record to give the decode-only limit a load is measured against.
package dataset
