//go:build !amd64 || purego

package jsonw

// haveScan: there is no scanEscape here; the word loop does it all.
const haveScan = false

func scanEscape(s []byte, html bool) int { return 0 }
