package jsonw

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// scanEscapeRef is scanEscape byte by byte.
func scanEscapeRef(s []byte, html bool) int {
	end := len(s) &^ 15
	for k := range end {
		c := s[k]
		if c >= utf8.RuneSelf || !plain[c] || html && !htmlSafe[c] {
			return k
		}
	}
	return end
}

// TestScanEscape compares scanEscape with scanEscapeRef in both dialects
// on every byte value at every offset of inputs of every length up to 80,
// and on random inputs.
func TestScanEscape(t *testing.T) {
	if !haveScan {
		t.Skip("no vector scan on this architecture")
	}
	check := func(s []byte) {
		t.Helper()
		for _, html := range []bool{false, true} {
			if n, want := scanEscape(s, html), scanEscapeRef(s, html); n != want {
				t.Fatalf("scanEscape(%q, %v) = %d; want %d", s, html, n, want)
			}
		}
	}
	for l := range 81 {
		base := make([]byte, l)
		for i := range base {
			base[i] = 'a'
		}
		check(base)
		for at := range l {
			for c := range 256 {
				s := append([]byte(nil), base...)
				s[at] = byte(c)
				check(s)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc \"\\\x01\x1f\x20\x7f\x80\xff<>&=?%'")
	for range 20000 {
		s := make([]byte, r.IntN(200))
		for i := range s {
			if r.IntN(40) == 0 {
				s[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				s[i] = 'a' + byte(r.IntN(26))
			}
		}
		check(s)
	}
}
