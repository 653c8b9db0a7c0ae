package session

import (
	"bytes"
	"encoding/json"
)

// scanObject walks the top-level members of the JSON object in line and
// calls fn with each key (its raw bytes between the quotes, a view of
// line, so an escaped spelling of a key this package looks up does not
// match it) and the raw value bytes. It checks the structure (strings,
// nesting, separators) but not every literal, so a line it accepts may
// still fail a full decode later; such a line is then skipped for the context like any other bad line.
// It returns false for a line that is not an object.
//
// Why not encoding/json: loading a long session decodes every line, and a
// full json.Unmarshal of each entry dominated the load time of a long
// session (docs/performance.md).
func scanObject(line []byte, fn func(key, val []byte)) bool {
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipWS(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return false
		}
		kEnd, ok := skipString(line, i)
		if !ok {
			return false
		}
		key := line[i+1 : kEnd-1]
		i = skipWS(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipWS(line, i+1)
		vEnd, ok := skipValue(line, i)
		if !ok {
			return false
		}
		fn(key, line[i:vEnd])
		i = skipWS(line, vEnd)
		if i >= len(line) {
			return false
		}
		if line[i] == '}' {
			return skipWS(line, i+1) == len(line)
		}
		if line[i] != ',' {
			return false
		}
		i = skipWS(line, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	j := i + 1
	for j < len(b) {
		// Jump to the next quote; it ends the string unless an odd run of
		// backslashes escapes it.
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return 0, false
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j, j > i
	}
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
	return scanObject(line, func(k, v []byte) { fn(string(k), v) })
}
