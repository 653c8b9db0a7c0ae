package jsonr

import "unsafe"

// unsafeString views b as a string without copying. b is either a fresh
// buffer nothing else references, or a slice of the (immutable) input.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
