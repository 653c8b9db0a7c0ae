package session

import (
	"encoding/json"

	"github.com/ompgo/omp/internal/jsonr"
)

// scanObject walks the top-level members of the JSON object in line and
// calls fn with each key (decoded, valid only during the call) and the raw
// value bytes: a view of line whose capacity runs to the end of line, so
// cap(line)-cap(val) is the value's offset (ReplaceMessages splices by
// it). It returns false for a line that is not one valid JSON object; fn
// may have been called for members before the fault. Only the values a
// caller needs are decoded: loading a long session reads every line, and
// a full json.Unmarshal of each entry was most of the load time.
func scanObject(line []byte, fn func(key, val []byte)) bool {
	r := jsonr.NewReader(line)
	r.Object(func(key []byte) error {
		at := r.Mark()
		if v := r.Raw(); r.Err() == nil {
			fn(key, line[at:at+len(v)])
		}
		return nil
	})
	return r.End() == nil
}

// rawString decodes a raw JSON string value; ok is false for anything
// else (null included).
func rawString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// ScanObject calls fn with each top-level member of the JSON object line
// (the raw value bytes, not copied); false when line is not an object.
func ScanObject(line []byte, fn func(key string, val []byte)) bool {
	return jsonr.EachField(line, fn) == nil
}
