package jsonr

import (
	"errors"
	"iter"
	"strings"
)

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
	if r.depth >= maxDepth {
		r.syntax("exceeded max depth")
		return false
	}
	r.pos++
	if r.depth < len(r.small) {
		r.small[r.depth] = c | 0x80
	} else {
		r.deep = append(r.deep[:r.depth-len(r.small)], c|0x80)
	}
	r.depth++
	return true
}

// More reports whether the open container has another member, consuming
// the separator, or its end.
func (r *Reader) More() bool {
	if r.err != nil || r.depth == 0 {
		return false
	}
	top := r.top()
	first := *top&0x80 != 0
	open := *top &^ 0x80
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
		r.depth--
		return false
	}
	if first {
		*top = open
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
// (or the reader's arena when the key has escapes); compare it with
// string(key) == "…".
func (r *Reader) Key() []byte {
	if r.Peek() != '"' {
		if r.err == nil {
			r.syntax("expected object key")
		}
		return nil
	}
	k := r.str()
	r.ws()
	if r.pos >= len(r.data) || r.data[r.pos] != ':' {
		r.syntax("expected ':' after object key")
		return nil
	}
	r.pos++
	return k
}

// errStopped reports a Fields or Elems loop left with break: the rest of
// the container is unread, so the document cannot be checked.
var errStopped = errors.New("jsonr: iteration stopped early")

// Fields iterates over the members of an object, yielding each key (see
// Key). The loop body reads the value with any method; a value it leaves
// untouched is skipped. A non-object value is a TypeError; leaving the
// loop early records an error.
func (r *Reader) Fields() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !r.BeginObject() {
			return
		}
		for r.More() {
			k := r.Key()
			if r.err != nil {
				return
			}
			at := r.Mark()
			if !yield(k) {
				r.Fail(errStopped)
				return
			}
			if r.pos == at {
				r.Skip()
			}
		}
	}
}

// Elems iterates over the elements of an array, yielding their indexes.
// The loop body reads each element; one left untouched is skipped.
func (r *Reader) Elems() iter.Seq[int] {
	return func(yield func(int) bool) {
		if !r.BeginArray() {
			return
		}
		for i := 0; r.More(); i++ {
			at := r.Mark()
			if !yield(i) {
				r.Fail(errStopped)
				return
			}
			if r.pos == at {
				r.Skip()
			}
		}
	}
}

// Object calls f with each key of an object; f must consume the value.
// The first error (f's or the reader's) stops the walk, is recorded, and
// is returned.
func (r *Reader) Object(f func(key []byte) error) error {
	if r.BeginObject() {
		for r.More() {
			k := r.Key()
			if r.err != nil {
				break
			}
			if err := f(k); err != nil {
				r.Fail(err)
				break
			}
		}
	}
	return r.err
}

// Array calls f for each element of an array; f must consume it. Errors
// are handled as by Object.
func (r *Reader) Array(f func() error) error {
	if r.BeginArray() {
		for r.More() {
			if err := f(); err != nil {
				r.Fail(err)
				break
			}
		}
	}
	return r.err
}

// EachField calls fn with each key and raw value of the top-level JSON
// object in data, in order, without decoding the values, and returns the
// reader's error (a value that is not an object is a TypeError).
func EachField(data []byte, fn func(key string, value []byte)) error {
	r := NewReader(data)
	r.Object(func(k []byte) error {
		if v := r.Raw(); r.err == nil {
			fn(string(k), v)
		}
		return nil
	})
	return r.End()
}

// FoldsTo reports whether key equals one of known but for case, as
// strings.EqualFold (and so encoding/json) sees it. A decoder that takes
// a fast path for exact keys uses it to defer to encoding/json, which
// matches keys case-insensitively. Unicode folding can pair keys of
// different byte lengths ("ſ" folds to "s", the Kelvin sign to "k"), so
// no length test comes first; it runs only for keys the fast path does
// not know.
func FoldsTo(key []byte, known ...string) bool {
	for _, n := range known {
		if strings.EqualFold(n, string(key)) {
			return true
		}
	}
	return false
}

// Valid reports whether data is exactly one well-formed JSON value
// (surrounding whitespace allowed), as encoding/json.Valid does.
func Valid(data []byte) bool {
	var r Reader
	r.Reset(data)
	r.Skip()
	return r.End() == nil
}

// ValidString is Valid for JSON text held in a string.
func ValidString(s string) bool { return Valid([]byte(s)) }
