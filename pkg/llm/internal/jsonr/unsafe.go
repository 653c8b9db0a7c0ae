package jsonr

import "unsafe"

// StringView returns b as a string without copying (the byte-view rule of
// the package doc: b must never be written again while the string is in
// use).
func StringView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// BytesView returns s's bytes without copying. The result must never be
// written to (the byte-view rule of the package doc).
func BytesView(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// unsafeString is StringView for the reader's own results: b is either a
// slice of the input or of an arena region nothing rewrites.
func unsafeString(b []byte) string { return StringView(b) }
