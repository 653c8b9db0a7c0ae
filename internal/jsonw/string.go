// Package jsonw appends JSON tokens to byte slices: the one hand-written
// JSON writer of the module. The provider adapters use it to write wire
// JSON on the hot path without reflection or allocation, and so does the
// agent's event stream; everything else writes JSON with encoding/json.
//
// Strings come in two dialects, because the wire formats' goldens were
// fixed by two different reference encoders:
//
//   - String writes exactly what encoding/json writes: '<', '>' and '&'
//     as \u003c, \u003e and \u0026 (HTML-safe), \b and \f in short form.
//     The Anthropic codec uses it.
//   - Plain writes what the pi-native, OpenAI and Google references
//     write: '<', '>' and '&' unescaped (as JSON.stringify leaves them),
//     and every other control byte, \b and \f included, as \u00XX.
//
// Both escape '"', '\\', \n, \r, \t, U+2028 and U+2029, and replace each
// invalid UTF-8 byte with \ufffd; both decode to the same string.
package jsonw

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

const (
	hexDigits = "0123456789abcdef"
	lsb       = 0x0101010101010101
	msb       = 0x8080808080808080
)

// maskPlain flags, in the high bit of each byte of v, the bytes Plain
// cannot copy as they are: '"', '\\', control bytes and non-ASCII bytes.
// Borrows can flag bytes above a true hit, never below, so the lowest
// flagged byte is always a real one.
func maskPlain(v uint64) uint64 {
	q := v ^ (lsb * '"')
	s := v ^ (lsb * '\\')
	return ((v - lsb*0x20) | (q - lsb) | (s - lsb) | v) & msb
}

// maskString is maskPlain for String, which also escapes '<', '>' and
// '&'. Setting one bit first pairs the bytes that differ only in it:
// '"' (0x22) with '&' (0x26), '<' (0x3c) with '>' (0x3e).
func maskString(v uint64) uint64 {
	qa := (v | lsb*0x04) ^ (lsb * '&')
	lg := (v | lsb*0x02) ^ (lsb * '>')
	s := v ^ (lsb * '\\')
	return ((v - lsb*0x20) | (qa - lsb) | (lg - lsb) | (s - lsb) | v) & msb
}

// maskBlockString is a cheaper maskString for whole-block tests, where
// a false alarm only ends a block run early: it flags '<', '>' and '\\'
// with '^', '|' and '~' (0x3c, 0x3e, 0x5c, 0x5e, 0x7c, 0x7e share all
// bits outside 0x62), bytes rare in prose.
func maskBlockString(v uint64) uint64 {
	qa := (v | lsb*0x04) ^ (lsb * '&')
	lgs := (v | lsb*0x62) ^ (lsb * '~')
	return ((v - lsb*0x20) | (qa - lsb) | (lgs - lsb) | v) & msb
}

// plain[c] and htmlSafe[c] are true for the ASCII bytes each dialect
// copies unescaped.
var plain, htmlSafe = func() (p, h [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\'
		h[c] = p[c] && c != '<' && c != '>' && c != '&'
	}
	return p, h
}()

// String appends s as a quoted JSON string, byte-for-byte as
// encoding/json.Marshal writes it.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendBody(dst, s, true)
	return append(dst, '"')
}

// Plain appends s as a quoted JSON string in the plain dialect (see the
// package doc).
func Plain(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendBody(dst, s, false)
	return append(dst, '"')
}

// PlainBody appends s escaped as Plain does, without the quotes.
func PlainBody(dst []byte, s string) []byte { return appendBody(dst, s, false) }

func appendBody(dst []byte, s string, html bool) []byte {
	safe := &plain
	if html {
		safe = &htmlSafe
	}
	src := s
	if cap(dst)-len(dst) < len(src) {
		dst = slices.Grow(dst, len(src)+len(src)>>3+64)
	}
	j := len(dst)
	buf := dst[:cap(dst)]
	i := 0
	var v, m uint64
	// A word costs at most 8 escapes of 6 bytes plus an 8-byte store; the
	// last bytes of a string, or of a tight buffer, go through appendTail
	// so a caller's exact-size buffer is not reallocated.
	for i+8 <= len(src) && len(buf)-j >= 64 {
		v = load64(src[i:])
		if html {
			m = maskString(v)
		} else {
			m = maskPlain(v)
		}
		if m == 0 {
			binary.LittleEndian.PutUint64(buf[j:], v)
			i, j = i+8, j+8
			// A clean word may open a long run (prose): take what
			// follows four words a step, inline (a call here would cost
			// the word loop its registers). The word that ends the run
			// goes to the flagged path with its mask, so a short run
			// costs no more than in the word loop; any superset of the
			// exact mask will do there.
			for i+32 <= len(src) && len(buf)-j >= 32+64 {
				s, d := src[i:i+32], buf[j:j+32]
				// The first word alone: where escapes come every few
				// words, the run ends here.
				v = load64(s)
				if html {
					m = maskBlockString(v)
				} else {
					m = maskPlain(v)
				}
				if m != 0 {
					goto flagged
				}
				v1 := load64(s[8:])
				v2 := load64(s[16:])
				v3 := load64(s[24:])
				// Stored before they are judged: the words from the
				// first flagged one on are written again.
				binary.LittleEndian.PutUint64(d, v)
				binary.LittleEndian.PutUint64(d[8:], v1)
				binary.LittleEndian.PutUint64(d[16:], v2)
				binary.LittleEndian.PutUint64(d[24:], v3)
				var m1, m2, m3 uint64
				if html {
					m1, m2, m3 = maskBlockString(v1), maskBlockString(v2), maskBlockString(v3)
				} else {
					m1, m2, m3 = maskPlain(v1), maskPlain(v2), maskPlain(v3)
				}
				switch {
				case m1 != 0:
					v, m = v1, m1
					i, j = i+8, j+8
					goto flagged
				case m2 != 0:
					v, m = v2, m2
					i, j = i+16, j+16
					goto flagged
				case m3 != 0:
					v, m = v3, m3
					i, j = i+24, j+24
					goto flagged
				}
				i, j = i+32, j+32
			}
			continue
		}
	flagged:
		// Handle the flagged bytes of the word in order, copying the
		// runs between them with one (shifted) word store each.
		w := i
		for ; m != 0; m &= m - 1 {
			k := w + bits.TrailingZeros64(m)>>3
			if k < i {
				continue // inside a multi-byte rune already copied
			}
			binary.LittleEndian.PutUint64(buf[j:], v>>(8*(i-w)))
			j += k - i
			i = k
			c := src[i]
			switch {
			case safe[c]: // a borrow's false alarm above a real hit, or maskBlockString's
				buf[j] = c
				i, j = i+1, j+1
			case c < utf8.RuneSelf:
				e := &escPlain[c]
				if html {
					e = &escHTML[c]
				}
				binary.LittleEndian.PutUint64(buf[j:], e.word)
				j += int(e.n)
				i++
			default:
				r, size := utf8.DecodeRuneInString(src[i:])
				switch {
				case r == utf8.RuneError && size == 1:
					j += copy(buf[j:], `\ufffd`)
				case r == '\u2028' || r == '\u2029':
					j += copy(buf[j:], `\u202`)
					buf[j] = hexDigits[r&0xF]
					j++
				default:
					j += copy(buf[j:j+size], src[i:i+size])
				}
				i += size
			}
		}
		if i < w+8 {
			binary.LittleEndian.PutUint64(buf[j:], v>>(8*(i-w)))
			j += w + 8 - i
			i = w + 8
		}
	}
	return appendTail(buf[:j], src[i:], html)
}

// escWord is an ASCII byte's escape, little-endian in word, n bytes long.
type escWord struct {
	word uint64
	n    uint8
}

// escPlain and escHTML hold each ASCII byte's escape in the two dialects,
// so the word loop writes one with a single store.
var escPlain, escHTML = func() (p, h [utf8.RuneSelf]escWord) {
	var b [8]byte
	for c := range utf8.RuneSelf {
		n := escapeASCII(b[:], byte(c), false)
		p[c] = escWord{binary.LittleEndian.Uint64(b[:]), uint8(n)}
		n = escapeASCII(b[:], byte(c), true)
		h[c] = escWord{binary.LittleEndian.Uint64(b[:]), uint8(n)}
		b = [8]byte{}
	}
	return p, h
}()

// escapeASCII writes the escape of ASCII byte c into b and returns its
// length (2 or 6).
func escapeASCII(b []byte, c byte, html bool) int {
	b[0] = '\\'
	switch {
	case c == '"' || c == '\\':
		b[1] = c
	case c == '\n':
		b[1] = 'n'
	case c == '\r':
		b[1] = 'r'
	case c == '\t':
		b[1] = 't'
	case html && c == '\b':
		b[1] = 'b'
	case html && c == '\f':
		b[1] = 'f'
	default:
		b[1], b[2], b[3], b[4], b[5] = 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]
		return 6
	}
	return 2
}

// load64 returns the little-endian word in the first 8 bytes of s; the
// compiler makes it one load.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendTail escapes src bytewise with append (the short rest of a
// string).
func appendTail(dst []byte, src string, html bool) []byte {
	safe := &plain
	if html {
		safe = &htmlSafe
	}
	start := 0
	var esc [6]byte
	for i := 0; i < len(src); {
		c := src[i]
		if safe[c] {
			i++
			continue
		}
		dst = append(dst, src[start:i]...)
		if c < utf8.RuneSelf {
			dst = append(dst, esc[:escapeASCII(esc[:], c, html)]...)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			dst = append(dst, src[i:i+size]...)
		}
		i += size
		start = i
	}
	return append(dst, src[start:]...)
}
