//go:build !purego

package jsonw

// haveScan: scanEscape is the assembly one.
const haveScan = true

// scanEscape returns the offset of the first byte of s that a dialect
// cannot copy as it is ('"', '\\', control bytes, bytes >= 0x80, and with
// html '<', '>' and '&'), taking s in 16-byte blocks: when no whole block
// has one, it is where the blocks end (len(s) rounded down to 16) and the
// rest is the caller's.
//
//go:noescape
func scanEscape(s []byte, html bool) int
