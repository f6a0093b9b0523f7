// Package clienttest holds the tests of the Go client (the module
// spangle/client, in ../client) that need the server: the client against
// real storaged and routerd processes, its examples, and a check that an
// app importing the client builds without any of the server's
// dependencies. They live in the server's module so that the client's
// module requires nothing (docs/design.md, "The Go client").
package clienttest
