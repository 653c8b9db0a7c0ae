//go:build !purego

package jsonr

// haveScan: scanPlain is the assembly one.
const haveScan = true

// scanPlain returns the offset n of the first byte of s that is '"',
// '\\' or a control byte, taking s in 16-byte blocks: when no whole block
// has one, n is where the blocks end (len(s) rounded down to 16) and the
// rest is the caller's. high reports whether a byte before n is >= 0x80.
//
//go:noescape
func scanPlain(s []byte) (n int, high bool)
