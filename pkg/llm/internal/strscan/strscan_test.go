package strscan

import (
	"math/rand/v2"
	"testing"
)

// plainRef is Plain byte by byte.
func plainRef(s []byte) (int, bool) {
	end := len(s) &^ 15
	high := false
	for k := range end {
		c := s[k]
		if c == '"' || c == '\\' || c < 0x20 {
			return k, high
		}
		high = high || c >= 0x80
	}
	return end, high
}

// escapeRef is Escape byte by byte.
func escapeRef(s []byte, html bool) int {
	end := len(s) &^ 15
	for k := range end {
		c := s[k]
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 || html && (c == '<' || c == '>' || c == '&') {
			return k
		}
	}
	return end
}

func check(t *testing.T, s []byte) {
	t.Helper()
	if n, high := Plain(s); true {
		if wn, whigh := plainRef(s); n != wn || high != whigh {
			t.Fatalf("Plain(%q) = %d, %v; want %d, %v", s, n, high, wn, whigh)
		}
	}
	for _, html := range []bool{false, true} {
		if n, want := Escape(s, html), escapeRef(s, html); n != want {
			t.Fatalf("Escape(%q, %v) = %d; want %d", s, html, n, want)
		}
	}
}

// TestScans compares Plain and Escape with their byte-at-a-time
// references on every byte value at every offset of inputs of every
// length up to 80 (clean ASCII, and high bytes before the hit), and on
// random inputs.
func TestScans(t *testing.T) {
	if !Have {
		t.Skip("no vector scans on this architecture or with purego")
	}
	for l := range 81 {
		for _, fill := range []byte{'a', 0xc3} {
			base := make([]byte, l)
			for i := range base {
				base[i] = fill
			}
			check(t, base)
			for at := range l {
				for c := range 256 {
					s := append([]byte(nil), base...)
					s[at] = byte(c)
					check(t, s)
				}
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
		check(t, s)
	}
}
