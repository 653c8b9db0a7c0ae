// Package jsonr is the module's one hand-written JSON reader: the
// provider codecs' request and stream decoders, the gateway's session-id
// scan and embeddings route and session-file loading read with it, each where a benchmark
// against encoding/json showed it pays. encoding/json validates a document before
// decoding it and re-scans nested values for every custom unmarshaler; a
// 300 KB agent request then costs several milliseconds. This reader
// validates while it decodes, so every byte is looked at once (eight at a
// time inside strings, 32 in a long clean run on amd64), and it allocates
// little: String copies each string, while Bytes returns escape-free
// strings as views of the input and unescaped ones from a few shared
// arenas sized by the share of the input that needed one.
//
// Usage: BeginObject / BeginArray, then `for r.More() { … }`, reading each
// member with Key and a value method (String, Int, Float, Bool, Raw, Skip,
// or a nested Begin*). Fields and Elems are range-over-func forms of the
// same loops, and Object / Array are callback forms for decoders that
// return errors. The first error sticks: later calls return zero values,
// and Err reports it.
//
// The aliasing rule: a byte slice a Reader returns (Bytes, Key, Number,
// Raw, Since) may alias the input or the reader's arena until the caller
// modifies the input or calls ResetReuse. NewReader and Reset start a
// fresh arena, so earlier values survive them while the input is
// unchanged. Escape-free strings, numbers and Raw alias the input; strings
// with escapes live in the arena (TestAliasingRule). A caller keeping a
// slice past that point copies it (bytes.Clone). String's results are
// copies and never alias.
package jsonr

import (
	"fmt"
	"strconv"
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
	data []byte
	pos  int
	err  error
	// open containers, innermost last: '{' or '[', with bit 0x80 set
	// until the first More. The first len(small) levels live in small
	// (no allocation); deeper ones in deep.
	depth int
	small [32]byte
	deep  []byte
	// arena backs the strings that needed unescaping. It is only ever
	// appended to (a full arena is replaced, never reused, but by
	// ResetReuse), so every string handed out stays valid. spent counts
	// the bytes earlier arenas took.
	arena []byte
	spent int
}

// NewReader returns a Reader of data. data must not change while the
// Reader or anything it returned is in use: Raw results and escape-free
// strings alias it (no copy).
func NewReader(data []byte) *Reader { return &Reader{data: data} }

// ResetReuse is Reset for a caller done with everything r returned
// before: it also reuses the arena, so those strings may be overwritten.
// A stream decoder reading one small document per event allocates nothing
// this way.
func (r *Reader) ResetReuse(data []byte) {
	*r = Reader{data: data, deep: r.deep[:0], arena: r.arena[:0]}
}

// Offset returns how many bytes of the input have been read.
func (r *Reader) Offset() int { return r.pos }

// Len returns the length of the input.
func (r *Reader) Len() int { return len(r.data) }

// Reset makes r a Reader of data, as NewReader does, keeping its buffers.
// Strings returned before stay valid.
func (r *Reader) Reset(data []byte) {
	*r = Reader{data: data, deep: r.deep[:0]}
}

// top returns the innermost open container.
func (r *Reader) top() *byte {
	if r.depth <= len(r.small) {
		return &r.small[r.depth-1]
	}
	return &r.deep[r.depth-1-len(r.small)]
}

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

// Since returns the input from mark to the current position (aliasing
// it), or nil after an error. Its capacity is capped at its length, so an
// append by whoever keeps it copies instead of overwriting the input that
// follows.
func (r *Reader) Since(mark int) []byte {
	if r.err != nil || mark > r.pos {
		return nil
	}
	return r.data[mark:r.pos:r.pos]
}

// Raw validates and returns the next value's bytes (aliasing the input,
// capacity capped as Since's).
func (r *Reader) Raw() []byte {
	r.ws()
	start := r.pos
	r.Skip()
	return r.Since(start)
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
		r.scan()
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
