package pick

import (
	"encoding/binary"
	"math/bits"
)

// xxHash32 primes (Yann Collet's XXH32 specification).
const (
	prime32x1 uint32 = 2654435761
	prime32x2 uint32 = 2246822519
	prime32x3 uint32 = 3266489917
	prime32x4 uint32 = 668265263
	prime32x5 uint32 = 374761393
)

// XXHash32 returns the 32-bit xxHash of the UTF-8 bytes of s with seed 0:
// the reference hashes session ids with Bun.hash.xxHash32, so a session
// lands on the same account behind a Go gateway as behind a reference one.
// It is implemented here rather than imported: it is
// forty lines and the vault packages take no third-party module.
func XXHash32(s string) uint32 {
	return xxHash32([]byte(s), 0)
}

func xxHash32(b []byte, seed uint32) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		v1 := seed + prime32x1 + prime32x2
		v2 := seed + prime32x2
		v3 := seed
		v4 := seed - prime32x1
		for len(b) >= 16 {
			v1 = round32(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = round32(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round32(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round32(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + prime32x5
	}
	h += uint32(n)
	for len(b) >= 4 {
		h += binary.LittleEndian.Uint32(b) * prime32x3
		h = bits.RotateLeft32(h, 17) * prime32x4
		b = b[4:]
	}
	for _, c := range b {
		h += uint32(c) * prime32x5
		h = bits.RotateLeft32(h, 11) * prime32x1
	}
	h ^= h >> 15
	h *= prime32x2
	h ^= h >> 13
	h *= prime32x3
	h ^= h >> 16
	return h
}

func round32(acc, lane uint32) uint32 {
	acc += lane * prime32x2
	return bits.RotateLeft32(acc, 13) * prime32x1
}
