package jsonw

import (
	"errors"
	"strconv"
)

// ErrSyntax reports malformed JSON found by EachField.
var ErrSyntax = errors.New("jsonw: malformed JSON")

// EachField calls fn with each key and raw value of the top-level JSON
// object in data, in order, without decoding the values. It is a fast way
// to find the keys a typed decode did not know.
func EachField(data []byte, fn func(key string, value []byte)) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrSyntax
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return ErrSyntax
		}
		end, esc := skipString(data, i)
		if end < 0 {
			return ErrSyntax
		}
		key := string(data[i+1 : end-1])
		if esc {
			k, err := strconv.Unquote(string(data[i:end]))
			if err != nil {
				return ErrSyntax
			}
			key = k
		}
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return ErrSyntax
		}
		i = skipWS(data, i+1)
		vend := skipValue(data, i)
		if vend < 0 {
			return ErrSyntax
		}
		fn(key, data[i:vend])
		i = skipWS(data, vend)
		if i >= len(data) {
			return ErrSyntax
		}
		if data[i] == '}' {
			return nil
		}
		if data[i] != ',' {
			return ErrSyntax
		}
		i = skipWS(data, i+1)
	}
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string at data[i] and whether it
// contains escapes; -1 when unterminated.
func skipString(data []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

// skipValue returns the index after the value at data[i], or -1.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		end, _ := skipString(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := skipString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
