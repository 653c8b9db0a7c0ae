package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
)

// A lenient JSON scanner for the session id: it finds the raw values of a
// body's top-level members and the elements of an array without decoding
// or validating them (the format codec has validated the body already);
// skipping a string is one bytes.IndexByte per quote.

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that opens at b[i]
// ('"'), or -1.
func skipString(b []byte, i int) int {
	i++
	for {
		k := nextQuote(b, i)
		if k < 0 {
			return -1
		}
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := k - 1; p >= i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
}

// nextQuote returns the index of the first '"' in b at or after i, or
// -1. A short string (a key, a role) ends in its first word, found without
// the call bytes.IndexByte costs; a long one goes to bytes.IndexByte.
func nextQuote(b []byte, i int) int {
	if i+8 <= len(b) {
		// The lowest flagged byte is the first quote: x-lsb borrows
		// only upward, and &^x drops bytes that were >= 0x80.
		x := binary.LittleEndian.Uint64(b[i:]) ^ 0x2222222222222222
		if m := (x - 0x0101010101010101) &^ x & 0x8080808080808080; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	if j := bytes.IndexByte(b[i:], '"'); j >= 0 {
		return i + j
	}
	return -1
}

// skipValue returns the index just past the value that starts at b[i]
// (no leading whitespace), or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number or a literal runs to the next delimiter.
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// eachMember calls fn with the raw key (quotes included) and raw value of
// every member of the top-level object b, in order; false when b is not an
// object as far as the lenient scan can tell.
func eachMember(b []byte, fn func(key, val []byte)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ke := skipString(b, i)
		if ke < 0 {
			return false
		}
		key := b[i:ke]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		ve := skipValue(b, i)
		if ve < 0 {
			return false
		}
		fn(key, b[i:ve])
		i = skipWS(b, ve)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

// eachElement calls fn with every raw element of the array b until fn
// returns false; isArray reports whether b is an array as far as the scan
// got.
func eachElement(b []byte, fn func(elem []byte) bool) (isArray bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for {
		e := skipValue(b, i)
		if e < 0 {
			return false
		}
		if !fn(b[i:e]) {
			return true
		}
		i = skipWS(b, e)
		if i >= len(b) || b[i] == ']' {
			return i < len(b)
		}
		if b[i] != ',' {
			return false
		}
		i = skipWS(b, i+1)
	}
}

// keyIs reports whether the raw key names field, as encoding/json matches
// a struct field: case-insensitively, escapes decoded.
func keyIs(raw []byte, field string) bool {
	k := raw[1 : len(raw)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return false
		}
		return strings.EqualFold(s, field)
	}
	return len(k) == len(field) && strings.EqualFold(string(k), field)
}

// scanSessionBody fills sb from body like json.Unmarshal would, reading
// only the members it needs; false when the scan could not read body.
func scanSessionBody(body []byte, sb *sessionBody) bool {
	return eachMember(body, func(key, val []byte) {
		switch {
		case keyIs(key, "prompt_cache_key"):
			sb.PromptCacheKey = ""
			_ = json.Unmarshal(val, &sb.PromptCacheKey)
		case keyIs(key, "metadata"):
			sb.Metadata = nil
			_ = json.Unmarshal(val, &sb.Metadata)
		case keyIs(key, "tools"):
			sb.Tools = val
		case keyIs(key, "messages"):
			sb.Messages = val
		case keyIs(key, "input"):
			sb.Input = val
		}
	})
}
