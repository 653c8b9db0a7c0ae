//go:build !amd64 || purego

package strscan

// Have: there are no scans here; the callers' word loops do it all.
const Have = false

// Plain is not available here (Have is false).
func Plain(s []byte) (n int, high bool) { return 0, false }

// Escape is not available here (Have is false).
func Escape(s []byte, html bool) int { return 0 }
