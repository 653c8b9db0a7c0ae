package jsonx

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// stringBytes consumes a string (the cursor is on its quote) and returns
// its decoded bytes: a slice of the input when it has no escapes and is
// valid UTF-8, else the scratch buffer (valid until the next decoding
// call). decode=false only validates and returns nil for strings that
// would need rewriting. Invalid UTF-8 and lone surrogates become U+FFFD,
// as with encoding/json.
func (d *Decoder) stringBytes(decode bool) []byte {
	b := d.b
	start := d.i + 1
	i := start
	escaped, badUTF8 := false, false
	// Pass 1: find the closing quote and validate.
	for {
		end := len(b)
		if i+8 <= len(b) {
			if !specialWord(binary.LittleEndian.Uint64(b[i:]), true) {
				i += 8
				continue
			}
			end = i + 8
		}
		if i >= len(b) {
			d.i = i
			d.syntax("unterminated string")
			return nil
		}
		for i < end {
			c := b[i]
			if plain[c] {
				i++
				continue
			}
			switch {
			case c == '"':
				d.i = i + 1
				if !escaped && !badUTF8 {
					if decode {
						return b[start:i]
					}
					return nil
				}
				if !decode {
					return nil
				}
				return d.unescape(b[start:i], badUTF8)
			case c == '\\':
				escaped = true
				if i+1 >= len(b) {
					d.i = i + 1
					d.syntax("unterminated string")
					return nil
				}
				if unescByte[b[i+1]] != 0 {
					i += 2
					continue
				}
				if b[i+1] != 'u' {
					d.i = i
					d.syntax("invalid escape")
					return nil
				}
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					d.i = i
					d.syntax("invalid \\u escape")
					return nil
				}
				i += 6
			case c < 0x20:
				d.i = i
				d.syntax("control character in string")
				return nil
			default: // non-ASCII
				r, size := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && size == 1 {
					badUTF8 = true
				}
				i += size
			}
		}
	}
}

// unescape decodes a validated string body into the scratch buffer. The
// output never outgrows the input except for invalid UTF-8 bytes (one
// byte becomes the three of U+FFFD).
func (d *Decoder) unescape(s []byte, badUTF8 bool) []byte {
	need := len(s) + 8
	if badUTF8 {
		need = 3*len(s) + 8
	}
	out := d.scratch[:0]
	if cap(out) < need {
		out = make([]byte, 0, need)
	}
	out = out[:cap(out)]
	j := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && c != '\\' {
			out[j] = c
			i, j = i+1, j+1
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				j += utf8.EncodeRune(out[j:], utf8.RuneError)
			} else {
				j += copy(out[j:], s[i:i+size])
			}
			i += size
			continue
		}
		if v := unescByte[s[i+1]]; v != 0 {
			out[j] = v
			i, j = i+2, j+1
			continue
		}
		r := hex4(s[i+2 : i+6])
		i += 6
		if utf16.IsSurrogate(r) {
			r2 := utf8.RuneError
			if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				r2 = hex4(s[i+2 : i+6])
			}
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				r = dec
				i += 6
			} else {
				r = utf8.RuneError
			}
		}
		j += utf8.EncodeRune(out[j:], r)
	}
	d.scratch = out[:0]
	return out[:j]
}

// unescByte maps the byte after a backslash to its value (0 = not a
// one-byte escape).
var unescByte = func() (t [256]byte) {
	t['"'], t['\\'], t['/'] = '"', '\\', '/'
	t['b'], t['f'], t['n'], t['r'], t['t'] = '\b', '\f', '\n', '\r', '\t'
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
