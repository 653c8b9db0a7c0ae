package jsonr

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags, in the high bit of each byte of v, the bytes a string
// scan must stop at: '"', '\\' and control bytes. Bytes >= 0x80 are not
// flagged. Borrows can flag bytes above a true hit, never below, so the
// lowest flagged byte is always a real one.
func special(v uint64) uint64 {
	q := v ^ (lsb * '"')
	s := v ^ (lsb * '\\')
	return ((v - lsb*0x20) | (q - lsb) | (s - lsb)) &^ v & msb
}

// skipPlain advances i, eight bytes at a time, to the first byte of d
// that special flags or to the last short word, OR-ing the bytes passed
// into hi (whose high bits then tell whether any was >= 0x80). After a
// clean word it goes on four words a step, testing the first alone, so a
// long string (prose) runs at block speed and a short one costs what it
// did a word at a time.
func skipPlain(d []byte, i int, hi uint64) (int, uint64) {
	for i+8 <= len(d) {
		v := binary.LittleEndian.Uint64(d[i:])
		if m := special(v); m != 0 {
			return stopAt(i, v, m, hi)
		}
		hi |= v
		i += 8
		for i+32 <= len(d) {
			w := d[i : i+32]
			v = binary.LittleEndian.Uint64(w)
			if m := special(v); m != 0 {
				return stopAt(i, v, m, hi)
			}
			v1 := binary.LittleEndian.Uint64(w[8:])
			v2 := binary.LittleEndian.Uint64(w[16:])
			v3 := binary.LittleEndian.Uint64(w[24:])
			m1, m2, m3 := special(v1), special(v2), special(v3)
			switch {
			case m1 != 0:
				return stopAt(i+8, v1, m1, hi|v)
			case m2 != 0:
				return stopAt(i+16, v2, m2, hi|v|v1)
			case m3 != 0:
				return stopAt(i+24, v3, m3, hi|v|v1|v2)
			}
			hi |= v | v1 | v2 | v3
			i += 32
		}
	}
	return i, hi
}

// stopAt returns the offset of the first byte mask m flags in word v at
// d[i:], and hi with the bytes of v before it.
func stopAt(i int, v, m, hi uint64) (int, uint64) {
	k := bits.TrailingZeros64(m) >> 3
	return i + k, hi | v&(1<<(8*k)-1)
}

// String reads a string value (null reads as ""). The string is a copy:
// it owns its bytes.
func (r *Reader) String() string {
	switch r.Peek() {
	case '"':
		return string(r.str())
	case 'n':
		r.Null()
		return ""
	}
	if r.err == nil {
		r.typeErr("string")
	}
	return ""
}

// Bytes reads a string value as bytes (null reads as nil), with the
// lifetime of String's result. The caller must not modify them.
func (r *Reader) Bytes() []byte {
	switch r.Peek() {
	case '"':
		return r.str()
	case 'n':
		r.Null()
		return nil
	}
	if r.err == nil {
		r.typeErr("string")
	}
	return nil
}

// str decodes the string at r.pos: invalid UTF-8 and lone surrogates
// become U+FFFD, as with encoding/json. A string without escapes is a
// view of the input; at the first backslash the rest is decoded into the
// arena in the same pass.
func (r *Reader) str() []byte {
	d := r.data
	start := r.pos + 1
	i := start
	var hi uint64
	for {
		i, hi = skipPlain(d, i, hi)
		if i >= len(d) {
			r.pos = len(d)
			r.syntax("unexpected end of JSON input")
			return nil
		}
		switch c := d[i]; {
		case c == '"':
			r.pos = i + 1
			s := d[start:i]
			if hi&msb != 0 && !utf8.Valid(s) {
				return toValidUTF8(s)
			}
			return s
		case c == '\\':
			return r.strEscaped(start, i, hi)
		case c < 0x20:
			r.pos = i
			r.syntax("invalid character in string literal")
			return nil
		default: // the tail shorter than a word
			hi |= uint64(c)
			i++
		}
	}
}

// strEscaped finishes str from the first backslash at d[i], decoding into
// the arena while it validates. A string that outgrows the arena moves,
// with what it has decoded so far, to a new one (see newArena).
func (r *Reader) strEscaped(start, i int, hi uint64) []byte {
	d := r.data
	if cap(r.arena)-len(r.arena) < i-start+arenaSlack {
		r.newArena(i-start+arenaSlack, start)
	}
	base := len(r.arena)
	out := r.arena[:cap(r.arena)]
	j := base + copy(out[base:], d[start:i])
	for {
		if len(out)-j < arenaSlack {
			// Keep the decoded part; make room for at least as much again.
			part := out[base:j]
			r.newArena(2*len(part)+arenaSlack, i)
			out = r.arena[:cap(r.arena)]
			base, j = 0, copy(out, part)
		}
		if i+8 <= len(d) {
			v := binary.LittleEndian.Uint64(d[i:])
			binary.LittleEndian.PutUint64(out[j:], v)
			m := special(v)
			if m == 0 {
				hi |= v
				i, j = i+8, j+8
				// A clean word may open a long run: go on four words a
				// step, inline (a call would cost this loop its
				// registers), testing the first alone; the word that ends
				// the run goes on below with its mask, so a short run
				// costs what it did a word at a time.
				for i+32 <= len(d) && len(out)-j >= 32+arenaSlack {
					w, o := d[i:i+32], out[j:j+32]
					v = binary.LittleEndian.Uint64(w)
					binary.LittleEndian.PutUint64(o, v)
					if m = special(v); m != 0 {
						goto hit
					}
					v1 := binary.LittleEndian.Uint64(w[8:])
					v2 := binary.LittleEndian.Uint64(w[16:])
					v3 := binary.LittleEndian.Uint64(w[24:])
					binary.LittleEndian.PutUint64(o[8:], v1)
					binary.LittleEndian.PutUint64(o[16:], v2)
					binary.LittleEndian.PutUint64(o[24:], v3)
					m1, m2, m3 := special(v1), special(v2), special(v3)
					switch {
					case m1 != 0:
						hi |= v
						v, m = v1, m1
						i, j = i+8, j+8
						goto hit
					case m2 != 0:
						hi |= v | v1
						v, m = v2, m2
						i, j = i+16, j+16
						goto hit
					case m3 != 0:
						hi |= v | v1 | v2
						v, m = v3, m3
						i, j = i+24, j+24
						goto hit
					}
					hi |= v | v1 | v2 | v3
					i, j = i+32, j+32
				}
				continue
			}
		hit:
			// All of v, not just the bytes before the hit: the rest of
			// the word is read again next, so only a word straddling the
			// closing quote can cost a needless utf8.Valid.
			hi |= v
			k := bits.TrailingZeros64(m) >> 3
			i, j = i+k, j+k
		} else if i >= len(d) {
			r.pos = len(d)
			r.syntax("unexpected end of JSON input")
			return nil
		}
		c := d[i]
		switch {
		case c == '"':
			r.pos = i + 1
			r.arena = out[:j]
			s := out[base:j:j]
			if hi&msb != 0 && !utf8.Valid(s) {
				return toValidUTF8(s)
			}
			return s
		case c < 0x20:
			r.pos = i
			r.syntax("invalid character in string literal")
			return nil
		case c != '\\': // the tail shorter than a word
			hi |= uint64(c)
			out[j] = c
			i, j = i+1, j+1
			continue
		}
		if i+1 >= len(d) {
			r.pos = i
			r.syntax("unexpected end of JSON input")
			return nil
		}
		e := d[i+1]
		i += 2
		if v := unescByte[e]; v != 0 {
			out[j] = v
			j++
			continue
		}
		// \u00XX for an ASCII byte (HTML-safe encoders write <, > and &
		// so) needs no rune decoding.
		if e == 'u' && i+4 <= len(d) && d[i] == '0' && d[i+1] == '0' {
			if h, l := hexVal[d[i+2]], hexVal[d[i+3]]; h < 8 && l != 0xFF {
				out[j] = h<<4 | l
				i, j = i+4, j+1
				continue
			}
		}
		rn, n, ok := unicodeEscape(d, i)
		if e != 'u' || !ok {
			r.pos = i - 2
			r.syntax("invalid escape in string literal")
			return nil
		}
		i += n
		j += utf8.EncodeRune(out[j:], rn)
	}
}

// arenaSlack is the room one step of strEscaped may write: a word store
// or an escape, with margin.
const arenaSlack = 16

// minArena is the smallest arena allocated (unless the rest of the input
// is smaller).
const minArena = 4 << 10

// newArena replaces the arena with one of at least need bytes, the input
// being read at offset at. A document's escaped strings cost their share
// of it: the arena is sized by the bytes earlier arenas took per input
// byte read, applied to the input still unread, so a 300 KB request whose
// escaped strings decode to 150 KB allocates about 160 KB (not the size
// of the unread input, as a single-pass arena must).
func (r *Reader) newArena(need, at int) {
	r.spent += len(r.arena)
	n := need
	if rest := len(r.data) - at; at > 0 && rest > 0 {
		est := int(float64(r.spent) / float64(at) * float64(rest))
		n += est + est>>3
		n = max(n, min(rest+arenaSlack, minArena))
	} else {
		n = max(n, min(len(r.data)+arenaSlack, minArena))
	}
	r.arena = make([]byte, 0, n)
}

// scan validates the string at r.pos (its opening quote) and moves past
// it. It returns the offset of the closing quote, whether the body has
// escapes, and whether it may have bytes >= 0x80.
func (r *Reader) scan() (end int, esc, high bool) {
	d := r.data
	i := r.pos + 1
	var hi uint64
	for {
		i, hi = skipPlain(d, i, hi)
		if i >= len(d) {
			r.pos = len(d)
			r.syntax("unexpected end of JSON input")
			return 0, false, false
		}
		switch c := d[i]; {
		case c == '"':
			r.pos = i + 1
			return i, esc, hi&msb != 0
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				r.pos = i
				r.syntax("unexpected end of JSON input")
				return 0, false, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(d, i+2); !ok {
					r.pos = i
					r.syntax("invalid escape in string literal")
					return 0, false, false
				}
				i += 6
			default:
				r.pos = i
				r.syntax("invalid escape in string literal")
				return 0, false, false
			}
		case c < 0x20:
			r.pos = i
			r.syntax("invalid character in string literal")
			return 0, false, false
		default: // the tail shorter than a word
			hi |= uint64(c)
			i++
		}
	}
}

// unescByte maps the byte after a backslash to the byte it stands for
// (0: not a one-byte escape).
var unescByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unicodeEscape decodes the XXXX of a \\uXXXX escape at b[i:] and, for a
// high surrogate, the low one that may follow. It returns the rune (a
// lone surrogate is U+FFFD, as with encoding/json) and the bytes used.
func unicodeEscape(b []byte, i int) (rune, int, bool) {
	c1, ok := hex4(b, i)
	if !ok {
		return 0, 0, false
	}
	rn := rune(c1)
	if !utf16.IsSurrogate(rn) {
		return rn, 4, true
	}
	if i+10 <= len(b) && b[i+4] == '\\' && b[i+5] == 'u' {
		if c2, ok := hex4(b, i+6); ok {
			if dec := utf16.DecodeRune(rn, rune(c2)); dec != utf8.RuneError {
				return dec, 10, true
			}
		}
	}
	return utf8.RuneError, 4, true
}

// toValidUTF8 replaces each invalid byte of s with U+FFFD.
func toValidUTF8(s []byte) []byte {
	out := make([]byte, 0, len(s)+8)
	for len(s) > 0 {
		c, size := utf8.DecodeRune(s)
		if c == utf8.RuneError && size == 1 {
			out = append(out, "\ufffd"...)
		} else {
			out = append(out, s[:size]...)
		}
		s = s[size:]
	}
	return out
}

// hexVal maps a byte to its hex digit value, or 0xFF.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xFF
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c], t[c-'a'+'A'] = byte(c-'a'+10), byte(c-'a'+10)
	}
	return t
}()

func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	a, c, e, f := hexVal[b[i]], hexVal[b[i+1]], hexVal[b[i+2]], hexVal[b[i+3]]
	if a|c|e|f == 0xFF {
		return 0, false
	}
	return uint16(a)<<12 | uint16(c)<<8 | uint16(e)<<4 | uint16(f), true
}
