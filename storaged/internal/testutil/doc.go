// Package testutil holds helpers for storaged's tests: finding the shared
// test data, the benchmark dataset, and storaged's names for writing
// source versions, which shared/versiontest does for every layer.
package testutil
