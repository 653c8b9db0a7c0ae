package google

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written reader for the one hot shape, streamed response chunks:
// encoding/json costs several microseconds per chunk through reflection
// and a validation pre-pass. Anything unusual (an error object, a value of
// an unexpected type) falls back to encoding/json, so the two always agree.

var errSyntax = errors.New("google: malformed JSON")

type lexer struct {
	b []byte
	i int
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
	for l.i < len(l.b) {
		c := l.b[l.i]
		if c == '"' {
			s := l.b[start:l.i]
			l.i++
			if !utf8.Valid(s) {
				return string([]rune(string(s))), nil // invalid bytes become U+FFFD, as encoding/json does
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
	start := l.i
	for l.i < len(l.b) && (l.b[l.i] == '-' || l.b[l.i] >= '0' && l.b[l.i] <= '9') {
		l.i++
	}
	return strconv.ParseInt(string(l.b[start:l.i]), 10, 64)
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
			if c == '\\' {
				l.i++
			} else if c == '"' {
				break
			}
		}
	case 't':
		err = l.literal("true")
	case 'f':
		err = l.literal("false")
	case 'n':
		err = l.literal("null")
	default:
		for l.i < len(l.b) && (l.b[l.i] == '-' || l.b[l.i] == '+' || l.b[l.i] == '.' ||
			l.b[l.i] == 'e' || l.b[l.i] == 'E' || l.b[l.i] >= '0' && l.b[l.i] <= '9') {
			l.i++
		}
		if l.i == start {
			return nil, errSyntax
		}
	}
	if err != nil {
		return nil, err
	}
	return l.b[start:l.i], nil
}

// foldsTo reports whether an unknown key matches a known one but for case:
// encoding/json would accept it, so the fast reader defers.
func foldsTo(k []byte, known ...string) bool {
	for _, n := range known {
		if len(n) == len(k) && strings.EqualFold(n, string(k)) {
			return true
		}
	}
	return false
}
