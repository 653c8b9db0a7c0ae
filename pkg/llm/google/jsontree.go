package google

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/internal/jsonw"
)

// object is a JSON object that keeps its key order (tool schemas are shown
// to the model; property order matters to it).
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	if i := slices.Index(o.keys, k); i >= 0 {
		o.keys = slices.Delete(o.keys, i, i+1)
	}
}

func (o *object) str(k string) string { s, _ := o.vals[k].(string); return s }

// maxDepth bounds schema nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

var errTooDeep = errors.New("schema nested too deeply")

// parseTree decodes JSON into *object, []any, string, json.Number, bool or
// nil values. The strings are copies: the tree outlives b.
func parseTree(b []byte) (any, error) {
	r := jsonr.NewReader([]byte(string(b)))
	v := parseValue(r, 0)
	if err := r.End(); err != nil {
		return nil, err
	}
	return v, nil
}

func parseValue(r *jsonr.Reader, depth int) any {
	if depth > maxDepth {
		r.Fail(errTooDeep)
		return nil
	}
	switch r.Peek() {
	case '{':
		o := newObject()
		r.Object(func(k []byte) error {
			key := string(k)
			o.set(key, parseValue(r, depth+1))
			return nil
		})
		return o
	case '[':
		arr := []any{}
		r.Array(func() error {
			arr = append(arr, parseValue(r, depth+1))
			return nil
		})
		return arr
	case '"':
		return r.String()
	case 't', 'f':
		return r.Bool()
	case 'n':
		r.Null()
		return nil
	}
	return json.Number(r.Number())
}

// appendTree encodes v compactly.
func appendTree(dst []byte, v any) []byte {
	switch v := v.(type) {
	case *object:
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.Plain(dst, k)
			dst = append(dst, ':')
			dst = appendTree(dst, v.vals[k])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTree(dst, e)
		}
		return append(dst, ']')
	case string:
		return jsonw.Plain(dst, v)
	case json.Number:
		return append(dst, v...)
	case bool:
		return jsonw.Bool(dst, v)
	case nil:
		return append(dst, "null"...)
	}
	b, _ := json.Marshal(v)
	return append(dst, b...)
}
