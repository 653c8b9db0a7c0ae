// Package interopdiff is the differential suite of `make interop-diff`
// (and `make interop`): it replays the same request sequences against the
// reference broker (TypeScript omp 18.1.21) and ours, each with its own
// fake OAuth token endpoint, and compares statuses and normalised JSON
// bodies. Every difference must be explained by one of the accepted
// differences in Decisions that its step names; anything else fails.
//
// The package holds the pieces that need no reference install (the fake
// token endpoint and its TLS-intercepting proxy, the sequence table, the
// runner, normalisation and comparison), unit-tested by `go test`; the
// end-to-end test that starts both brokers and the reference CLI is behind
// the `interop` build tag (interop_test.go).
package interopdiff
