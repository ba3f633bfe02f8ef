//go:build race

package boltstore_test

// raceBuild is true when the tests are built with -race (and so with Go's
// pointer checks).
const raceBuild = true
