package pick

import "testing"

func TestXXHash32MatchesOracleVectors(t *testing.T) {
	for _, v := range xxHash32Vectors {
		if got := XXHash32(v.in); got != v.want {
			t.Errorf("XXHash32(%q) = %#08x, want %#08x", v.in, got, v.want)
		}
	}
}

// naiveXXHash32 is a second, index-based transcription of the XXH32
// specification, written independently of xxHash32 (no slice advancing, no
// encoding/binary), so the fuzz target below can compare the two on any input.
func naiveXXHash32(b []byte) uint32 {
	rotl := func(x uint32, r uint) uint32 { return x<<r | x>>(32-r) }
	le := func(i int) uint32 {
		return uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
	}
	const p1, p2, p3, p4, p5 uint32 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	var acc uint32
	i := 0
	if len(b) >= 16 {
		var zero uint32
		v := [4]uint32{zero + p1 + p2, p2, 0, zero - p1}
		for ; i+16 <= len(b); i += 16 {
			for k := range 4 {
				v[k] = rotl(v[k]+le(i+4*k)*p2, 13) * p1
			}
		}
		acc = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)
	} else {
		acc = p5
	}
	acc += uint32(len(b))
	for ; i+4 <= len(b); i += 4 {
		acc = rotl(acc+le(i)*p3, 17) * p4
	}
	for ; i < len(b); i++ {
		acc = rotl(acc+uint32(b[i])*p5, 11) * p1
	}
	acc = (acc ^ acc>>15) * p2
	acc = (acc ^ acc>>13) * p3
	return acc ^ acc>>16
}

func TestNaiveXXHash32AgreesWithOracle(t *testing.T) {
	for _, v := range xxHash32Vectors {
		if got := naiveXXHash32([]byte(v.in)); got != v.want {
			t.Errorf("naive(%q) = %#08x, want %#08x", v.in, got, v.want)
		}
	}
}

func FuzzXXHash32(f *testing.F) {
	for _, v := range xxHash32Vectors {
		f.Add(v.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := XXHash32(s), naiveXXHash32([]byte(s)); got != want {
			t.Fatalf("XXHash32(%q) = %#08x, naive = %#08x", s, got, want)
		}
	})
}
