package llm

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
)

var emptyObject = json.RawMessage("{}")

// FinalizeArguments turns a tool call's complete argument text into its
// canonical arguments: the text itself when it is a
// JSON object, {} when it is empty, and {"__raw":"<text>"} otherwise.
func FinalizeArguments(text string) json.RawMessage {
	t := strings.TrimSpace(text)
	if t == "" {
		return emptyObject
	}
	if t[0] == '{' && jsonr.ValidString(t) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(struct {
		Raw string `json:"__raw"`
	}{text})
	return b
}

// NormalizeArguments returns canonical arguments and their text for a
// decoded arguments value: an object is kept, null or absent becomes {},
// and anything else is kept as {"__raw": <its text>}.
func NormalizeArguments(v json.RawMessage) (json.RawMessage, string) {
	t := strings.TrimSpace(string(v))
	if t == "" || t == "null" {
		return emptyObject, ""
	}
	return FinalizeArguments(t), t
}

// ParsePartialJSON returns the best JSON view of a possibly incomplete
// JSON text: the text itself when it is valid, otherwise the longest
// prefix that can be completed (a dangling key, colon, comma or partial
// literal dropped, an open string value closed, open containers closed in
// reverse order), or {} when nothing usable remains. It never panics.
func ParsePartialJSON(text string) json.RawMessage {
	if text == "" {
		return emptyObject
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	p := partialScan(text)
	if p.stringOpen {
		s := trimDanglingEscape(text)
		out := make([]byte, 0, len(s)+1+len(p.stack))
		out = append(out, s...)
		out = append(out, '"')
		out = appendClosers(out, p.stack)
		if json.Valid(out) {
			return out
		}
	}
	if p.safe <= 0 {
		return emptyObject
	}
	out := make([]byte, 0, p.safe+p.safeDepth)
	out = append(out, text[:p.safe]...)
	out = appendClosers(out, p.stack[:p.safeDepth])
	if !json.Valid(out) {
		return emptyObject
	}
	return out
}

func appendClosers(out []byte, stack []byte) []byte {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			out = append(out, '}')
		} else {
			out = append(out, ']')
		}
	}
	return out
}

// trimDanglingEscape drops an incomplete escape sequence at the end of an
// unterminated string.
func trimDanglingEscape(s string) string {
	// An incomplete \uXXXX.
	if i := strings.LastIndex(s, `\u`); i >= 0 && len(s)-i < 6 && oddBackslashesBefore(s, i+1) {
		return s[:i]
	}
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	if n%2 == 1 {
		return s[:len(s)-1]
	}
	return s
}

// oddBackslashesBefore reports whether the backslash run ending at index
// end (inclusive) has odd length, i.e. the last one starts an escape.
func oddBackslashesBefore(s string, end int) bool {
	n := 0
	for i := end - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

type partialResult struct {
	stack      []byte // open containers at the end of the scan
	safe       int    // length of the longest completable prefix
	safeDepth  int    // containers open at safe
	stringOpen bool   // the text ends inside a string value
}

// Object states.
const (
	stKey   = iota // expecting a key (or '}' right after '{')
	stColon        // key read, expecting ':'
	stValue        // expecting a value
	stAfter        // value read, expecting ',' or a closer
)

// partialScan walks text once, tracking open containers and the last
// position where the text can be cut and closed into valid JSON.
func partialScan(text string) partialResult {
	var r partialResult
	var states []uint8
	state := uint8(stValue)
	markSafe := func(i int) { r.safe, r.safeDepth = i, len(r.stack) }
	i := 0
	for i < len(text) {
		c := text[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		top := byte(0)
		if len(r.stack) > 0 {
			top = r.stack[len(r.stack)-1]
		}
		switch state {
		case stKey:
			switch {
			case c == '"':
				end, ok := scanString(text, i)
				if !ok {
					return r // dangling key: drop it
				}
				i, state = end, stColon
			case c == '}' && top == '{':
				i = closeContainer(&r, &states, &state, i)
				markSafe(i)
			default:
				return r
			}
		case stColon:
			if c != ':' {
				return r
			}
			i, state = i+1, stValue
		case stValue:
			switch {
			case c == '{' || c == '[':
				r.stack = append(r.stack, c)
				states = append(states, stAfter)
				i++
				if c == '{' {
					state = stKey
				} else {
					state = stValue
				}
				markSafe(i)
			case c == ']' && top == '[':
				i = closeContainer(&r, &states, &state, i)
				markSafe(i)
			case c == '"':
				end, ok := scanString(text, i)
				if !ok {
					r.stringOpen = true
					return r
				}
				i, state = end, stAfter
				markSafe(i)
			default:
				end := i
				for end < len(text) && !strings.ContainsRune(" \t\r\n,]}:", rune(text[end])) {
					end++
				}
				if !json.Valid([]byte(text[i:end])) {
					return r // partial or bad literal: drop it
				}
				i, state = end, stAfter
				markSafe(i)
			}
		case stAfter:
			switch {
			case c == ',' && top == '{':
				i, state = i+1, stKey
			case c == ',' && top == '[':
				i, state = i+1, stValue
			case (c == '}' && top == '{') || (c == ']' && top == '['):
				i = closeContainer(&r, &states, &state, i)
				markSafe(i)
			default:
				return r
			}
		}
	}
	return r
}

func closeContainer(r *partialResult, states *[]uint8, state *uint8, i int) int {
	r.stack = r.stack[:len(r.stack)-1]
	*state = (*states)[len(*states)-1]
	*states = (*states)[:len(*states)-1]
	return i + 1
}

// scanString returns the index after the string starting at text[i] == '"'
// and whether it was terminated.
func scanString(text string, i int) (int, bool) {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(text), false
}
