// Package testutil holds helpers for storaged's tests: finding the shared
// test data and writing source versions with seqfile.Writer.
package testutil
