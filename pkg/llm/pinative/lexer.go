package pinative

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small single-pass JSON reader (the same as pkg/llm/google's): the
// encoding/json path re-scans a 300 KB agent request about ten times
// (RawMessage fields, custom unmarshalers) and costs several milliseconds.
// Any surprise makes the fast decoder give up and the encoding/json path
// decide, so both always agree.

var errSyntax = errors.New("pinative: malformed JSON")

type lexer struct {
	b []byte
	i int
	// s is b as one string (optional): unescaped strings are then sliced
	// from it instead of allocated one by one.
	s string
}

func (l *lexer) ws() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

func (l *lexer) peek() byte {
	l.ws()
	if l.i < len(l.b) {
		return l.b[l.i]
	}
	return 0
}

func (l *lexer) expect(c byte) error {
	if l.peek() != c {
		return errSyntax
	}
	l.i++
	return nil
}

// object calls f for each key of an object; f must consume the value.
func (l *lexer) object(f func(key []byte) error) error {
	if err := l.expect('{'); err != nil {
		return err
	}
	if l.peek() == '}' {
		l.i++
		return nil
	}
	for {
		key, err := l.rawString()
		if err != nil {
			return err
		}
		if err := l.expect(':'); err != nil {
			return err
		}
		if err := f(key); err != nil {
			return err
		}
		switch l.peek() {
		case ',':
			l.i++
		case '}':
			l.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// array calls f for each element; f must consume it.
func (l *lexer) array(f func() error) error {
	if err := l.expect('['); err != nil {
		return err
	}
	if l.peek() == ']' {
		l.i++
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		switch l.peek() {
		case ',':
			l.i++
		case ']':
			l.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// rawString returns the bytes between the quotes of a string without
// escapes (keys), failing on an escaped key.
func (l *lexer) rawString() ([]byte, error) {
	if err := l.expect('"'); err != nil {
		return nil, err
	}
	start := l.i
	for l.i < len(l.b) {
		switch c := l.b[l.i]; {
		case c == '"':
			l.i++
			return l.b[start : l.i-1], nil
		case c == '\\' || c < 0x20:
			return nil, errSyntax
		}
		l.i++
	}
	return nil, errSyntax
}

// str decodes a string value (or null as "").
func (l *lexer) str() (string, error) {
	if l.peek() == 'n' {
		return "", l.literal("null")
	}
	if err := l.expect('"'); err != nil {
		return "", err
	}
	start := l.i
	high := false
	for l.i < len(l.b) {
		for l.i+8 <= len(l.b) && plain8(l.b[l.i:l.i+8]) {
			l.i += 8
		}
		if l.i >= len(l.b) {
			break
		}
		c := l.b[l.i]
		if c >= 0x80 {
			high = true
		}
		if c == '"' {
			s := l.b[start:l.i]
			l.i++
			if high && !utf8.Valid(s) {
				return string([]rune(string(s))), nil // invalid bytes become U+FFFD, as encoding/json does
			}
			if len(l.s) == len(l.b) {
				return l.s[start : l.i-1], nil
			}
			return string(s), nil
		}
		if c == '\\' {
			return l.escaped(start)
		}
		if c < 0x20 {
			return "", errSyntax
		}
		l.i++
	}
	return "", errSyntax
}

// escaped finishes a string that contains escapes, from its start.
func (l *lexer) escaped(start int) (string, error) {
	out := make([]byte, 0, l.i-start+16)
	out = append(out, l.b[start:l.i]...)
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case c == '"':
			l.i++
			if !utf8.Valid(out) {
				return string([]rune(string(out))), nil
			}
			return string(out), nil
		case c < 0x20:
			return "", errSyntax
		case c != '\\':
			out = append(out, c)
			l.i++
			continue
		}
		if l.i+1 >= len(l.b) {
			return "", errSyntax
		}
		e := l.b[l.i+1]
		l.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := l.hex4()
			if !ok {
				return "", errSyntax
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if l.i+1 < len(l.b) && l.b[l.i] == '\\' && l.b[l.i+1] == 'u' {
					save := l.i
					l.i += 2
					if x, ok := l.hex4(); ok {
						r2 = x
					} else {
						l.i = save
					}
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
				} else {
					if r2 >= 0 {
						l.i -= 6 // the second escape stands on its own
					}
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errSyntax
		}
	}
	return "", errSyntax
}

func (l *lexer) hex4() (rune, bool) {
	if l.i+4 > len(l.b) {
		return 0, false
	}
	var r rune
	for _, c := range l.b[l.i : l.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	l.i += 4
	return r, true
}

func (l *lexer) literal(lit string) error {
	l.ws()
	if len(l.b)-l.i < len(lit) || string(l.b[l.i:l.i+len(lit)]) != lit {
		return errSyntax
	}
	l.i += len(lit)
	return nil
}

func (l *lexer) boolean() (bool, error) {
	switch l.peek() {
	case 't':
		return true, l.literal("true")
	case 'f':
		return false, l.literal("false")
	case 'n':
		return false, l.literal("null")
	}
	return false, errSyntax
}

func (l *lexer) integer() (int64, error) {
	if l.peek() == 'n' {
		return 0, l.literal("null")
	}
	n := numberLen(l.b[l.i:])
	if n == 0 {
		return 0, errSyntax
	}
	v, err := strconv.ParseInt(string(l.b[l.i:l.i+n]), 10, 64)
	l.i += n
	return v, err
}

// numberLen returns the length of the JSON number at the start of b, or
// 0 when there is none.
func numberLen(b []byte) int {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0
		}
	}
	return i
}

// skip consumes any value and returns its raw bytes.
func (l *lexer) skip() ([]byte, error) {
	l.ws()
	start := l.i
	var err error
	switch l.peek() {
	case '{':
		err = l.object(func([]byte) error { _, err := l.skip(); return err })
	case '[':
		err = l.array(func() error { _, err := l.skip(); return err })
	case '"':
		l.i++
		for {
			if l.i >= len(l.b) {
				return nil, errSyntax
			}
			c := l.b[l.i]
			l.i++
			if c == '"' {
				break
			}
			if c < 0x20 {
				return nil, errSyntax
			}
			if c == '\\' {
				if l.i >= len(l.b) {
					return nil, errSyntax
				}
				e := l.b[l.i]
				l.i++
				switch e {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if _, ok := l.hex4(); !ok {
						return nil, errSyntax
					}
				default:
					return nil, errSyntax
				}
			}
		}
	case 't':
		err = l.literal("true")
	case 'f':
		err = l.literal("false")
	case 'n':
		err = l.literal("null")
	default:
		n := numberLen(l.b[l.i:])
		if n == 0 {
			return nil, errSyntax
		}
		l.i += n
	}
	if err != nil {
		return nil, err
	}
	return l.b[start:l.i], nil
}

func (l *lexer) number() (float64, error) {
	if l.peek() == 'n' {
		return 0, l.literal("null")
	}
	raw, err := l.skip()
	if err != nil || len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, errSyntax
	}
	return strconv.ParseFloat(string(raw), 64)
}

// plain8 reports whether b[:8] are printable ASCII bytes other than '"'
// and '\\'.
func plain8(b []byte) bool {
	v := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	less := func(x, n uint64) uint64 { return (x - lo*n) & ^x & hi }
	has := func(x, c uint64) uint64 { return less(x^(lo*c), 1) }
	return (v&hi)|less(v, 0x20)|has(v, '"')|has(v, '\\') == 0
}
