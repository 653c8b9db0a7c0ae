package openai

import (
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
)

// chatFast decodes the common shape of a chat.completion.chunk without
// encoding/json, reusing its buffers from chunk to chunk, so a streamed
// delta costs no allocation. It accepts only exact keys seen once, with
// the expected kinds, and no usage or error object; on anything else it
// reports false and the parser decodes the chunk with encoding/json,
// which stays the reference for every edge case.
type chatFast struct {
	r       jsonr.Reader
	choices []chatChunkChoice
	tools   []chatToolDelta
	// strs backs the *string fields of the deltas.
	strs []string
	ints []int
}

// decode fills c from data and reports whether it could. Its strings view
// data or the reader's arena, both reused for the next chunk: the parser
// copies what it keeps.
func (f *chatFast) decode(data []byte, c *chatChunk) bool {
	r := &f.r
	r.ResetReuse(data)
	*c = chatChunk{}
	if f.strs == nil {
		f.strs, f.ints = make([]string, 0, 32), make([]int, 0, 16)
	}
	clear(f.strs[:cap(f.strs)]) // drop views of the last chunk
	f.choices, f.tools, f.strs, f.ints = f.choices[:0], f.tools[:0], f.strs[:0], f.ints[:0]
	if !r.BeginObject() {
		return false
	}
	var seen uint32
	for r.More() {
		k := r.Key()
		switch string(k) {
		case "id":
			s, ok := f.str(&seen, 1)
			if !ok {
				return false
			}
			c.ID = s
		case "choices":
			if !once(&seen, 2) || !f.decodeChoices(c) {
				return false
			}
		case "usage":
			if !once(&seen, 4) || !r.Null() {
				return false // once a stream: encoding/json decodes it
			}
		case "error":
			if !once(&seen, 8) || !r.Null() {
				return false
			}
			c.Error = nullRaw
		default:
			if jsonr.FoldsTo(k, "id", "choices", "usage", "error") {
				return false
			}
			r.Skip()
		}
	}
	return r.End() == nil
}

var nullRaw = []byte("null")

// once records bit in seen and reports whether it was not set before.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// str reads a string or null (as encoding/json leaves a string field on
// null: empty) for the field bit of seen.
func (f *chatFast) str(seen *uint32, bit uint32) (string, bool) { return readStr(&f.r, seen, bit) }

func readStr(r *jsonr.Reader, seen *uint32, bit uint32) (string, bool) {
	if !once(seen, bit) {
		return "", false
	}
	switch r.Peek() {
	case '"':
		s := r.String()
		return s, r.Err() == nil
	case 'n':
		return "", r.Null()
	}
	return "", false
}

// strPtr reads a *string field: nil on null, else a pointer into f.strs.
func (f *chatFast) strPtr(seen *uint32, bit uint32, dst **string) bool {
	if f.r.Peek() == 'n' {
		return once(seen, bit) && f.r.Null()
	}
	s, ok := f.str(seen, bit)
	if !ok {
		return false
	}
	if len(f.strs) == cap(f.strs) {
		return false // pointers into f.strs must not move: let encoding/json decode it
	}
	f.strs = append(f.strs, s)
	*dst = &f.strs[len(f.strs)-1]
	return true
}

// int reads a plain integer (no fraction or exponent, as encoding/json
// requires for an int field).
func (f *chatFast) int(seen *uint32, bit uint32) (int, bool) {
	if !once(seen, bit) {
		return 0, false
	}
	if f.r.Peek() == 'n' {
		return 0, f.r.Null()
	}
	if f.r.Peek() == '"' {
		return 0, false
	}
	n, err := strconv.Atoi(string(f.r.Number()))
	return n, err == nil && f.r.Err() == nil
}

func (f *chatFast) decodeChoices(c *chatChunk) bool {
	r := &f.r
	if r.Null() {
		return true
	}
	if r.Peek() != '[' || !r.BeginArray() {
		return false
	}
	for r.More() {
		if r.Peek() != '{' {
			return false
		}
		f.choices = append(f.choices, chatChunkChoice{})
		ch := &f.choices[len(f.choices)-1]
		r.BeginObject()
		var seen uint32
		for r.More() {
			k := r.Key()
			switch string(k) {
			case "index":
				n, ok := f.int(&seen, 1)
				if !ok {
					return false
				}
				ch.Index = n
			case "delta":
				if !once(&seen, 2) || !f.decodeDelta(&ch.Delta) {
					return false
				}
			case "finish_reason":
				if !f.strPtr(&seen, 4, &ch.FinishReason) {
					return false
				}
			default:
				if jsonr.FoldsTo(k, "index", "delta", "finish_reason") {
					return false
				}
				r.Skip()
			}
		}
	}
	c.Choices = f.choices
	return r.Err() == nil
}

func (f *chatFast) decodeDelta(d *chatDelta) bool {
	r := &f.r
	if r.Null() {
		return true
	}
	if r.Peek() != '{' || !r.BeginObject() {
		return false
	}
	var seen uint32
	for r.More() {
		k := r.Key()
		ok := true
		switch string(k) {
		case "content":
			ok = f.strPtr(&seen, 1, &d.Content)
		case "reasoning_content":
			ok = f.strPtr(&seen, 2, &d.ReasoningContent)
		case "reasoning":
			ok = f.strPtr(&seen, 4, &d.Reasoning)
		case "refusal":
			ok = f.strPtr(&seen, 8, &d.Refusal)
		case "tool_calls":
			ok = once(&seen, 16) && f.decodeTools(d)
		default:
			if jsonr.FoldsTo(k, "content", "reasoning_content", "reasoning", "refusal", "tool_calls") {
				return false
			}
			r.Skip()
		}
		if !ok {
			return false
		}
	}
	return r.Err() == nil
}

func (f *chatFast) decodeTools(d *chatDelta) bool {
	r := &f.r
	if r.Null() {
		return true
	}
	if r.Peek() != '[' || !r.BeginArray() {
		return false
	}
	start := len(f.tools)
	for r.More() {
		if r.Peek() != '{' {
			return false
		}
		f.tools = append(f.tools, chatToolDelta{})
		td := &f.tools[len(f.tools)-1]
		r.BeginObject()
		var seen uint32
		for r.More() {
			k := r.Key()
			switch string(k) {
			case "index":
				if r.Peek() == 'n' {
					if !once(&seen, 1) || !r.Null() {
						return false
					}
					continue
				}
				n, ok := f.int(&seen, 1)
				if !ok || len(f.ints) == cap(f.ints) {
					return false
				}
				f.ints = append(f.ints, n)
				td.Index = &f.ints[len(f.ints)-1]
			case "id":
				s, ok := f.str(&seen, 2)
				if !ok {
					return false
				}
				td.ID = s
			case "type":
				s, ok := f.str(&seen, 4)
				if !ok {
					return false
				}
				td.Type = s
			case "function":
				if !once(&seen, 8) || !f.nameArgs(&td.Function.Name, &td.Function.Arguments, "arguments") {
					return false
				}
			case "custom":
				if !once(&seen, 16) || !f.nameArgs(&td.Custom.Name, &td.Custom.Input, "input") {
					return false
				}
			default:
				if jsonr.FoldsTo(k, "index", "id", "type", "function", "custom") {
					return false
				}
				r.Skip()
			}
		}
	}
	d.ToolCalls = f.tools[start:len(f.tools):len(f.tools)]
	return r.Err() == nil
}

// nameArgs reads a {"name":…, args:…} object.
func (f *chatFast) nameArgs(name, args *string, argsKey string) bool {
	r := &f.r
	if r.Null() {
		return true
	}
	if r.Peek() != '{' || !r.BeginObject() {
		return false
	}
	var seen uint32
	for r.More() {
		k := r.Key()
		switch {
		case string(k) == "name":
			s, ok := f.str(&seen, 1)
			if !ok {
				return false
			}
			*name = s
		case string(k) == argsKey:
			s, ok := f.str(&seen, 2)
			if !ok {
				return false
			}
			*args = s
		default:
			if jsonr.FoldsTo(k, "name", argsKey) {
				return false
			}
			r.Skip()
		}
	}
	return r.Err() == nil
}

// respEventKeys are the fields respEvent decodes.
var respEventKeys = []string{"type", "response", "item", "delta", "text", "arguments", "input", "refusal", "part", "code", "message", "error"}

// fastDelta decodes a *.delta event (only type and delta set) without
// encoding/json, reusing the reader's buffers; it reports false for any
// other event or shape, which the parser then decodes with encoding/json.
// e's strings view data or the arena and die with the next event.
func (p *respParser) fastDelta(data []byte, e *respEvent) bool {
	r := &p.rd
	r.ResetReuse(data)
	*e = respEvent{}
	if !r.BeginObject() {
		return false
	}
	var seen uint32
	for r.More() {
		k := r.Key()
		ok := true
		switch string(k) {
		case "type":
			e.Type, ok = readStr(r, &seen, 1)
		case "delta":
			e.Delta, ok = readStr(r, &seen, 2)
		default:
			if jsonr.FoldsTo(k, respEventKeys...) {
				return false
			}
			r.Skip()
		}
		if !ok {
			return false
		}
	}
	return r.End() == nil && strings.HasSuffix(e.Type, ".delta")
}
