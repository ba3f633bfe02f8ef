// Package archtest holds the tests that keep docs/architecture.md true:
// its diagram against the module's real imports, and the names its prose
// cites against the module's declarations. It has no code of its own.
package archtest
