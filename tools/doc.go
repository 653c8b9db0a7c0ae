// Package tools holds no code of its own: its subdirectories are the
// harness programs and test-only packages of the repository — the
// whole-process benchmarks, the differential suite against the reference
// broker, the fake upstream of the CLI end-to-end scripts, the container
// image builder and the usage page's browser test. No product binary and
// no package under pkg/ or internal/ links any of them outside its tests;
// the test in this package checks that.
package tools
