package jsonx

import (
	"errors"
	"fmt"
	"iter"
	"strconv"
	"unsafe"
)

// MaxDepth is the deepest nesting the Decoder accepts.
const MaxDepth = 10000

// SyntaxError is a malformed-JSON error with the byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset) }

// ErrType is wrapped by errors for a value of the wrong JSON type.
var ErrType = errors.New("wrong JSON type")

// Decoder is a pull lexer over one JSON document. The first error sticks:
// every later call is a no-op returning zero values, and Err reports it.
// Slices it returns (Raw, Bytes, keys) alias the input.
type Decoder struct {
	b       []byte
	i       int
	err     error
	depth   int
	scratch []byte
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Reset reuses d for b.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b, scratch: d.scratch[:0]} }

// Err returns the first error.
func (d *Decoder) Err() error { return d.err }

// Fail records err (wrapping is the caller's business) unless an error is
// already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) syntax(msg string) {
	d.Fail(&SyntaxError{Offset: d.i, Msg: msg})
}

// typeErr records a wrong-type error for the value at the cursor.
func (d *Decoder) typeErr(want string) {
	if d.i >= len(d.b) {
		d.syntax("unexpected end of input")
		return
	}
	switch c := d.b[d.i]; {
	case c == '{' || c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n' || c == '-' || c >= '0' && c <= '9':
	default:
		d.syntax("invalid character")
		return
	}
	d.Fail(fmt.Errorf("%w: want %s at offset %d", ErrType, want, d.i))
}

func (d *Decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// Kind returns the first byte of the next value ('{', '[', '"', 't', 'f',
// 'n', '-' or a digit), or 0 at the end or after an error.
func (d *Decoder) Kind() byte {
	if d.err != nil {
		return 0
	}
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// End checks that only whitespace remains.
func (d *Decoder) End() error {
	if d.err == nil {
		d.ws()
		if d.i != len(d.b) {
			d.syntax("unexpected data after top-level value")
		}
	}
	return d.err
}

// Fields iterates over the members of an object, yielding each key (valid
// until the next step). The loop body must consume the value (any reading
// method); a value it leaves untouched is skipped. A non-object value is a
// type error.
func (d *Decoder) Fields() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if d.Kind() != '{' {
			if d.err == nil {
				d.typeErr("object")
			}
			return
		}
		if !d.push() {
			return
		}
		defer func() { d.depth-- }()
		d.i++
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == '}' {
			d.i++
			return
		}
		for d.err == nil {
			d.ws()
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				d.syntax("expected object key")
				return
			}
			key := d.stringBytes(true)
			d.ws()
			if d.err != nil {
				return
			}
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				d.syntax("expected ':'")
				return
			}
			d.i++
			d.ws()
			at := d.i
			if !yield(key) {
				d.Fail(errors.New("jsonx: object iteration stopped early"))
				return
			}
			if d.err != nil {
				return
			}
			if d.i == at {
				d.Skip()
			}
			d.ws()
			if d.i >= len(d.b) {
				d.syntax("unexpected end of object")
				return
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case '}':
				d.i++
				return
			default:
				d.syntax("expected ',' or '}'")
				return
			}
		}
	}
}

// Elems iterates over the elements of an array, yielding their positions.
// The loop body must consume each element; one left untouched is skipped.
func (d *Decoder) Elems() iter.Seq[int] {
	return func(yield func(int) bool) {
		if d.Kind() != '[' {
			if d.err == nil {
				d.typeErr("array")
			}
			return
		}
		if !d.push() {
			return
		}
		defer func() { d.depth-- }()
		d.i++
		d.ws()
		if d.i < len(d.b) && d.b[d.i] == ']' {
			d.i++
			return
		}
		for n := 0; d.err == nil; n++ {
			d.ws()
			at := d.i
			if !yield(n) {
				d.Fail(errors.New("jsonx: array iteration stopped early"))
				return
			}
			if d.err != nil {
				return
			}
			if d.i == at {
				d.Skip()
			}
			d.ws()
			if d.i >= len(d.b) {
				d.syntax("unexpected end of array")
				return
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case ']':
				d.i++
				return
			default:
				d.syntax("expected ',' or ']'")
				return
			}
		}
	}
}

func (d *Decoder) push() bool {
	d.depth++
	if d.depth > MaxDepth {
		d.depth--
		d.syntax("nesting too deep")
		return false
	}
	return true
}

// Null consumes a null and reports whether there was one.
func (d *Decoder) Null() bool {
	if d.Kind() == 'n' {
		d.literal("null")
		return d.err == nil
	}
	return false
}

// String returns a string value as a new string. null yields "".
func (d *Decoder) String() string {
	switch d.Kind() {
	case '"':
		return string(d.stringBytes(true))
	case 'n':
		d.literal("null")
		return ""
	}
	if d.err == nil {
		d.typeErr("string")
	}
	return ""
}

// Bytes returns a string value's bytes, valid until the next call. null
// yields nil.
func (d *Decoder) Bytes() []byte {
	switch d.Kind() {
	case '"':
		return d.stringBytes(true)
	case 'n':
		d.literal("null")
		return nil
	}
	if d.err == nil {
		d.typeErr("string")
	}
	return nil
}

// Bool returns a boolean value.
func (d *Decoder) Bool() bool {
	switch d.Kind() {
	case 't':
		d.literal("true")
		return true
	case 'f':
		d.literal("false")
		return false
	}
	if d.err == nil {
		d.typeErr("boolean")
	}
	return false
}

// Float returns a number value.
func (d *Decoder) Float() float64 {
	b := d.number()
	if d.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil {
		d.Fail(fmt.Errorf("%w: number %s out of range", ErrType, b))
	}
	return f
}

// Int returns an integer value (an integral float such as 100.0 is
// accepted).
func (d *Decoder) Int() int64 {
	b := d.number()
	if d.err != nil {
		return 0
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) {
		d.Fail(fmt.Errorf("%w: %s is not an integer", ErrType, b))
		return 0
	}
	return int64(f)
}

func (d *Decoder) number() []byte {
	k := d.Kind()
	if k != '-' && (k < '0' || k > '9') {
		if d.err == nil {
			d.typeErr("number")
		}
		return nil
	}
	start := d.i
	d.skipNumber()
	return d.b[start:d.i]
}

// Raw consumes any value and returns its bytes (aliasing the input).
func (d *Decoder) Raw() []byte {
	d.ws()
	start := d.i
	d.Skip()
	if d.err != nil {
		return nil
	}
	return d.b[start:d.i]
}

// Skip consumes and validates any value.
func (d *Decoder) Skip() {
	switch k := d.Kind(); k {
	case 0:
		if d.err == nil {
			d.syntax("unexpected end of input")
		}
	case '{':
		for range d.Fields() {
			d.Skip()
		}
	case '[':
		for range d.Elems() {
			d.Skip()
		}
	case '"':
		d.stringBytes(false)
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		if k == '-' || (k >= '0' && k <= '9') {
			d.skipNumber()
			return
		}
		d.syntax("invalid character")
	}
}

func (d *Decoder) literal(lit string) {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		d.syntax("invalid literal")
		return
	}
	d.i += len(lit)
}

func (d *Decoder) skipNumber() {
	b, i := d.b, d.i
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
		d.i = i
		d.syntax("invalid number")
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			d.i = i
			d.syntax("invalid number")
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			d.i = i
			d.syntax("invalid number")
			return
		}
	}
	d.i = i
}

// Offset returns the cursor position after any whitespace, for Since.
func (d *Decoder) Offset() int {
	d.ws()
	return d.i
}

// Since returns the input bytes from start to the cursor (aliasing the
// input), or nil after an error.
func (d *Decoder) Since(start int) []byte {
	if d.err != nil || start > d.i {
		return nil
	}
	return d.b[start:d.i]
}
