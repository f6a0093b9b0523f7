// Package luafilter generates the Lua script that Envoy's Lua HTTP filter
// runs on every request to set the x-spangle-partition header, so that
// Envoy routes, which can only match headers, can send a key to the
// replicas of its partition.
//
// The partition is the one storaged and routerd compute
// (partitioner.Partition over the URL-unescaped key), written in Lua that
// LuaJIT runs exactly: see script.go for how the int32 arithmetic is done
// with doubles.
package luafilter
