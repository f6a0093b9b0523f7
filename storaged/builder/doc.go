// Package builder makes the local copy of a version and opens it: it
// reuses a complete copy the local store holds from the same files,
// copies the partitions peers already serve (checked block by block), and
// builds the rest from the source with storaged/loader. It also builds a
// version again beside the copy that serves (its files changed) and a
// single partition (one added, or a corrupt one rebuilt).
//
// The builder decides nothing: versions.Manager says what to build and
// when, and wraps the opened partitions in a servable Version. A Builder
// holds no lock and is safe for concurrent use.
package builder
