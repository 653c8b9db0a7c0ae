// Package jsonx is a small, allocation-free JSON lexer and appender for the
// OpenAI codecs' hot paths. encoding/json needs about 1 ms just to validate
// a 300 KB agent request on the target machine, which is the whole
// translation budget; this package walks the bytes once, eight at a time
// where it can (SWAR), and leaves schema and tool payloads as raw slices.
//
// The Decoder is a pull lexer: callers walk objects and arrays themselves
// and pick the fields they know. Append* functions write JSON tokens onto a
// byte slice.
package jsonx

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialWord reports whether the 8 bytes of v hold a byte that needs
// attention in a JSON string: '"', '\\', a control byte, or (when high is
// set) a non-ASCII byte.
func specialWord(v uint64, high bool) bool {
	q := v ^ (lsb * '"')
	s := v ^ (lsb * '\\')
	m := ((v - lsb*0x20) | (q - lsb) | (s - lsb)) &^ v
	if high {
		m |= v
	}
	return m&msb != 0
}

// plain[c] is true for bytes that a JSON string carries unescaped and that
// need no UTF-8 check: printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 is replaced by
// U+FFFD as encoding/json does; '<', '>' and '&' are not escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringBody(dst, s)
	return append(dst, '"')
}

// AppendStringBody appends s escaped for the inside of a JSON string
// (without the quotes).
func AppendStringBody(dst []byte, s string) []byte {
	// A read-only byte view of s, so the word loads compile to one load.
	src := unsafe.Slice(unsafe.StringData(s), len(s))
	j := len(dst)
	buf := slices.Grow(dst, len(src)+len(src)>>3+64)
	buf = buf[:cap(buf)]
	for i := 0; i < len(src); {
		// Room for one word, or eight bytes escaped as \u00XX each.
		if len(buf)-j < 64 {
			buf = slices.Grow(buf[:j], len(src)-i+64)
			buf = buf[:cap(buf)]
		}
		end := len(src)
		if i+8 <= len(src) {
			v := binary.LittleEndian.Uint64(src[i:])
			if !specialWord(v, true) {
				binary.LittleEndian.PutUint64(buf[j:], v)
				i, j = i+8, j+8
				continue
			}
			end = i + 8 // escapes are dense in code: do this word bytewise
		}
		for i < end {
			c := src[i]
			if plain[c] {
				buf[j] = c
				i, j = i+1, j+1
				continue
			}
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRune(src[i:])
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
				continue
			}
			buf[j] = '\\'
			switch c {
			case '"', '\\':
				buf[j+1] = c
				j += 2
			case '\n':
				buf[j+1] = 'n'
				j += 2
			case '\r':
				buf[j+1] = 'r'
				j += 2
			case '\t':
				buf[j+1] = 't'
				j += 2
			default:
				buf[j+1], buf[j+2], buf[j+3], buf[j+4], buf[j+5] = 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]
				j += 6
			}
			i++
		}
	}
	return buf[:j]
}

// AppendKey appends `"key":` for a key that needs no escaping, preceded by
// a comma unless dst ends with '{'.
func AppendKey(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendStringField appends `"key":"value"`.
func AppendStringField(dst []byte, key, value string) []byte {
	return AppendString(AppendKey(dst, key), value)
}

// AppendIntField appends `"key":n`.
func AppendIntField(dst []byte, key string, n int64) []byte {
	return strconv.AppendInt(AppendKey(dst, key), n, 10)
}

// AppendFloat appends f the way encoding/json does for float64.
func AppendFloat(dst []byte, f float64) []byte {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// AppendBoolField appends `"key":true|false`.
func AppendBoolField(dst []byte, key string, v bool) []byte {
	return strconv.AppendBool(AppendKey(dst, key), v)
}

// AppendRawField appends `"key":raw`; raw must be valid JSON.
func AppendRawField(dst []byte, key string, raw []byte) []byte {
	return append(AppendKey(dst, key), raw...)
}

// Comma appends ',' unless dst ends with '{' or '[' (or is empty).
func Comma(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	return dst
}
