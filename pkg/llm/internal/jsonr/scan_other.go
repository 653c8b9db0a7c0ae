//go:build !amd64 || purego

package jsonr

// haveScan: there is no scanPlain here; the word loop does it all.
const haveScan = false

func scanPlain(s []byte) (n int, high bool) { return 0, false }
