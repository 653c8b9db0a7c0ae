//go:build !purego

package strscan

// Have: the scans are the assembly ones.
const Have = true

// Plain returns the offset n of the first byte of s that a JSON string
// reader stops at: '"', '\\' or a control byte. high reports whether a byte
// before n is >= 0x80 (the reader then checks the UTF-8).
//
//go:noescape
func Plain(s []byte) (n int, high bool)

// Escape returns the offset of the first byte of s that a JSON string
// writer cannot copy as it is: '"', '\\', a control byte or a byte >= 0x80,
// and with html also '<', '>' or '&'.
//
//go:noescape
func Escape(s []byte, html bool) int
