// Package jsonr is a single-pass JSON reader for the provider codecs'
// request decoders. encoding/json validates a document before decoding it
// and re-scans nested values for every custom unmarshaler; a 300 KB agent
// request then costs several milliseconds. This reader validates while it
// decodes, so every byte is looked at once.
//
// Usage: BeginObject / BeginArray, then `for r.More() { … }`, reading each
// member with Key and a value method (String, Int, Float, Bool, Raw, Skip,
// or a nested Begin*). The first error sticks: later calls return zero
// values, and Err reports it.
package jsonr

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting (encoding/json uses 10000).
const maxDepth = 10000

// SyntaxError is malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset) }

// TypeError is a value of the wrong JSON kind.
type TypeError struct {
	Offset int
	Want   string // "string", "number", "object", …
	Got    string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("expected %s, got %s at offset %d", e.Want, e.Got, e.Offset)
}

// Reader reads one JSON document.
type Reader struct {
	data  []byte
	pos   int
	err   error
	stack []byte // open containers: '{' or '[', with bit 0x80 set until the first More
}

// NewReader returns a Reader of data. data must not change while the
// Reader or anything it returned is in use: Raw results and escape-free
// strings alias it.
func NewReader(data []byte) *Reader { return &Reader{data: data, stack: make([]byte, 0, 16)} }

// Err returns the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records err (when none is recorded yet); decoders use it for their
// own schema errors.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *Reader) syntax(msg string) {
	r.Fail(&SyntaxError{Offset: r.pos, Msg: msg})
	r.pos = len(r.data)
}

func (r *Reader) ws() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// Peek returns the first byte of the next value without consuming it (0 at
// the end or after an error).
func (r *Reader) Peek() byte {
	if r.err != nil {
		return 0
	}
	r.ws()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// Kind names the kind of the next value: "object", "array", "string",
// "number", "bool", "null", or "end".
func (r *Reader) Kind() string {
	switch c := r.Peek(); {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	}
	return "end"
}

func (r *Reader) typeErr(want string) {
	got := r.Kind()
	if got == "end" {
		if r.pos >= len(r.data) {
			r.syntax("unexpected end of JSON input")
		} else {
			r.syntax("invalid character " + strconv.QuoteRune(rune(r.data[r.pos])) + " looking for beginning of value")
		}
		return
	}
	r.Fail(&TypeError{Offset: r.pos, Want: want, Got: got})
	r.pos = len(r.data)
}

// Null consumes a null and reports whether there was one.
func (r *Reader) Null() bool {
	if r.Peek() == 'n' {
		r.literal("null")
		return r.err == nil
	}
	return false
}

// BeginObject consumes '{'. It reports false (and records a TypeError)
// when the value is not an object.
func (r *Reader) BeginObject() bool { return r.begin('{', "object") }

// BeginArray consumes '['.
func (r *Reader) BeginArray() bool { return r.begin('[', "array") }

func (r *Reader) begin(c byte, kind string) bool {
	if r.Peek() != c {
		if r.err == nil {
			r.typeErr(kind)
		}
		return false
	}
	if len(r.stack) >= maxDepth {
		r.syntax("exceeded max depth")
		return false
	}
	r.pos++
	r.stack = append(r.stack, c|0x80)
	return true
}

// More reports whether the open container has another member, consuming
// the separator, or its end.
func (r *Reader) More() bool {
	if r.err != nil || len(r.stack) == 0 {
		return false
	}
	top := r.stack[len(r.stack)-1]
	first := top&0x80 != 0
	open := top &^ 0x80
	closer := byte('}')
	if open == '[' {
		closer = ']'
	}
	r.ws()
	if r.pos >= len(r.data) {
		r.syntax("unexpected end of JSON input")
		return false
	}
	c := r.data[r.pos]
	if c == closer {
		if !first && r.data[r.pos-1] == ',' {
			r.syntax("trailing comma")
			return false
		}
		r.pos++
		r.stack = r.stack[:len(r.stack)-1]
		return false
	}
	if first {
		r.stack[len(r.stack)-1] = open
		return true
	}
	if c != ',' {
		r.syntax("expected ',' or '" + string(closer) + "'")
		return false
	}
	r.pos++
	r.ws()
	if r.pos < len(r.data) && r.data[r.pos] == closer {
		r.syntax("trailing comma")
		return false
	}
	return true
}

// Key reads an object key and its colon. The result aliases the input
// when the key has no escapes; compare it with string(key) == "…".
func (r *Reader) Key() []byte {
	if r.Peek() != '"' {
		if r.err == nil {
			r.syntax("expected object key")
		}
		return nil
	}
	k, _ := r.str()
	r.ws()
	if r.pos >= len(r.data) || r.data[r.pos] != ':' {
		r.syntax("expected ':' after object key")
		return nil
	}
	r.pos++
	return k
}

// String reads a string value (null reads as ""). A string without
// escapes aliases the input (no copy): the input must not be modified
// while the result is in use.
func (r *Reader) String() string {
	switch r.Peek() {
	case '"':
		b, _ := r.str()
		return unsafeString(b)
	case 'n':
		r.Null()
		return ""
	}
	if r.err == nil {
		r.typeErr("string")
	}
	return ""
}

// str reads a quoted string at r.pos. alias reports whether the result
// aliases the input (no escapes, valid UTF-8); otherwise it is a fresh
// slice owned by the caller.
func (r *Reader) str() (out []byte, alias bool) {
	start := r.pos + 1
	q := bytes.IndexByte(r.data[start:], '"')
	if q < 0 {
		q = len(r.data) - start
	}
	s := r.data[start : start+q]
	if bs := bytes.IndexByte(s, '\\'); bs >= 0 {
		s = s[:bs]
		for i, c := range s {
			if c < 0x20 {
				r.pos = start + i
				r.syntax("invalid character in string literal")
				return nil, true
			}
		}
		return r.strSlow(start, start+bs)
	}
	ascii := true
	for i, c := range s {
		if c < 0x20 {
			r.pos = start + i
			r.syntax("invalid character in string literal")
			return nil, true
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if start+q >= len(r.data) {
		r.pos = len(r.data)
		r.syntax("unexpected end of JSON input")
		return nil, true
	}
	r.pos = start + q + 1
	if !ascii && !utf8.Valid(s) {
		return []byte(toValidUTF8(s)), false
	}
	return s, true
}

func toValidUTF8(s []byte) string {
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
	return string(out)
}

func (r *Reader) strSlow(start, i int) ([]byte, bool) {
	out := make([]byte, 0, rawStringLen(r.data, i)+i-start)
	out = append(out, r.data[start:i]...)
	for i < len(r.data) {
		c := r.data[i]
		switch {
		case c == '"':
			r.pos = i + 1
			if !utf8.Valid(out) {
				return []byte(toValidUTF8(out)), false
			}
			return out, false
		case c == '\\':
			if i+1 >= len(r.data) {
				r.pos = i
				r.syntax("unexpected end of JSON input")
				return nil, true
			}
			e := r.data[i+1]
			i += 2
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
				c1, ok := hex4(r.data, i)
				if !ok {
					r.pos = i
					r.syntax("invalid escape in string literal")
					return nil, true
				}
				i += 4
				rn := rune(c1)
				if utf16.IsSurrogate(rn) {
					rn = utf8.RuneError
					if i+6 <= len(r.data) && r.data[i] == '\\' && r.data[i+1] == 'u' {
						if c2, ok := hex4(r.data, i+2); ok {
							if dec := utf16.DecodeRune(rune(c1), rune(c2)); dec != utf8.RuneError {
								rn = dec
								i += 6
							}
						}
					}
				}
				out = utf8.AppendRune(out, rn)
			default:
				r.pos = i - 1
				r.syntax("invalid escape in string literal")
				return nil, true
			}
		case c < 0x20:
			r.pos = i
			r.syntax("invalid character in string literal")
			return nil, true
		default:
			// Copy the run up to the next backslash or quote in one go.
			rest := r.data[i:]
			j := bytes.IndexByte(rest, '"')
			if j < 0 {
				j = len(rest)
			}
			if k := bytes.IndexByte(rest[:j], '\\'); k >= 0 {
				j = k
			}
			for k, b := range rest[:j] {
				if b < 0x20 {
					j = k
					break
				}
			}
			if j == 0 {
				j = 1 // a control byte: the next iteration reports it
				if rest[0] < 0x20 {
					r.pos = i
					r.syntax("invalid character in string literal")
					return nil, true
				}
			}
			j += i
			out = append(out, r.data[i:j]...)
			i = j
		}
	}
	r.pos = len(r.data)
	r.syntax("unexpected end of JSON input")
	return nil, true
}

// rawStringLen returns the raw length from i to the closing quote (an
// upper bound of the decoded length), or the rest of data.
func rawStringLen(data []byte, i int) int {
	j := i
	for {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return len(data) - i
		}
		j += q
		n := 0
		for k := j - 1; k >= i && data[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j - i
		}
		j++
	}
}

func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}

// number scans a number and returns its text.
func (r *Reader) number() []byte {
	start := r.pos
	i := r.pos
	d := r.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		r.pos = i
		r.syntax("invalid number")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			r.pos = i
			r.syntax("invalid number")
			return nil
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			r.pos = i
			r.syntax("invalid number")
			return nil
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	r.pos = i
	return d[start:i]
}

// Float reads a number (null reads as 0).
func (r *Reader) Float() float64 {
	c := r.Peek()
	if c == 'n' {
		r.Null()
		return 0
	}
	if c != '-' && (c < '0' || c > '9') {
		if r.err == nil {
			r.typeErr("number")
		}
		return 0
	}
	n := r.number()
	if r.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(unsafeString(n), 64)
	if err != nil {
		r.Fail(&TypeError{Offset: r.pos, Want: "number", Got: "out-of-range number"})
		return 0
	}
	return f
}

// Int reads an integer (null reads as 0). A fraction or overflow is a
// TypeError.
func (r *Reader) Int() int64 {
	f := r.Float()
	if r.err == nil && (f != math.Trunc(f) || f > 1<<53 || f < -(1<<53)) {
		r.Fail(&TypeError{Offset: r.pos, Want: "integer", Got: "number"})
		return 0
	}
	return int64(f)
}

// Bool reads true or false (null reads as false).
func (r *Reader) Bool() bool {
	switch r.Peek() {
	case 't':
		r.literal("true")
		return r.err == nil
	case 'f':
		r.literal("false")
		return false
	case 'n':
		r.Null()
		return false
	}
	if r.err == nil {
		r.typeErr("boolean")
	}
	return false
}

func (r *Reader) literal(lit string) {
	if len(r.data)-r.pos < len(lit) || string(r.data[r.pos:r.pos+len(lit)]) != lit {
		r.syntax("invalid literal")
		return
	}
	r.pos += len(lit)
}

// Raw validates and returns the next value's bytes (aliasing the input).
func (r *Reader) Raw() []byte {
	r.ws()
	start := r.pos
	r.Skip()
	if r.err != nil {
		return nil
	}
	return r.data[start:r.pos]
}

// Skip validates and consumes the next value.
func (r *Reader) Skip() {
	switch c := r.Peek(); {
	case c == '{':
		if r.BeginObject() {
			for r.More() {
				r.Key()
				r.Skip()
			}
		}
	case c == '[':
		if r.BeginArray() {
			for r.More() {
				r.Skip()
			}
		}
	case c == '"':
		r.str()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		r.number()
	case r.err == nil:
		if r.pos >= len(r.data) {
			r.syntax("unexpected end of JSON input")
		} else {
			r.syntax("invalid character " + strconv.QuoteRune(rune(c)) + " looking for beginning of value")
		}
	}
}

// End checks that only whitespace follows the document.
func (r *Reader) End() error {
	if r.err == nil {
		r.ws()
		if r.pos != len(r.data) {
			r.syntax("invalid character after top-level value")
		}
	}
	return r.err
}

// Mark returns the offset where the next value starts; Since(mark) then
// returns the bytes of everything read after it.
func (r *Reader) Mark() int {
	r.ws()
	return r.pos
}

// Since returns the input from mark to the current position.
func (r *Reader) Since(mark int) []byte {
	if r.err != nil || mark > r.pos {
		return nil
	}
	return r.data[mark:r.pos]
}
