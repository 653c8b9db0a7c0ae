package jsonr

import (
	"math/rand/v2"
	"testing"
)

// scanPlainRef is scanPlain byte by byte.
func scanPlainRef(s []byte) (int, bool) {
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

// TestScanPlain compares scanPlain with scanPlainRef on every byte value
// at every offset of blocks of every length up to 80, on clean ASCII and
// on a run with high bytes before the hit, and on random inputs.
func TestScanPlain(t *testing.T) {
	if !haveScan {
		t.Skip("no vector scan on this architecture")
	}
	check := func(s []byte) {
		t.Helper()
		n, high := scanPlain(s)
		wn, whigh := scanPlainRef(s)
		if n != wn || high != whigh {
			t.Fatalf("scanPlain(%q) = %d, %v; want %d, %v", s, n, high, wn, whigh)
		}
	}
	for l := range 81 {
		for _, fill := range []byte{'a', 0xc3} {
			base := make([]byte, l)
			for i := range base {
				base[i] = fill
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
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("abc \"\\\x01\x1f\x20\x7f\x80\xff<>&")
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
