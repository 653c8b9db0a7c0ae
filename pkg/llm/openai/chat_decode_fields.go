package openai

import (
	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// Readers of the Chat request members shared with the Responses decoder:
// tools, tool_choice, stop, metadata, cache_control and optional numbers.

func decodeChatTools(d *jsonr.Reader) []llm.Tool {
	var tools []llm.Tool
	for range d.Elems() {
		var t llm.Tool
		var typ string
		var raw = d.Raw()
		sub := jsonr.NewReader(raw)
		for k := range sub.Fields() {
			switch string(k) {
			case "type":
				typ = sub.String()
			case "function", "custom":
				for k := range sub.Fields() {
					decodeToolField(sub, k, &t)
				}
			case "cache_control":
				t.Cache = decodeCache(sub)
			}
		}
		if sub.Err() != nil {
			d.Fail(sub.Err())
			return nil
		}
		switch typ {
		case "function", "":
		case "custom":
			t.Custom, t.CustomWireName = true, t.Name
		default:
			t.Native, t.NativeAPI, t.Name = raw, llm.APIOpenAIChat, typ
		}
		tools = append(tools, t)
	}
	return tools
}

// decodeToolChoice reads the Chat / Responses tool_choice forms, plus the
// Anthropic-style {"type":"tool","name"} the reference accepts.
func decodeToolChoice(d *jsonr.Reader) llm.ToolChoice {
	if d.Peek() == '"' {
		switch s := d.String(); s {
		case "auto", "none", "required":
			return llm.ToolChoice{Mode: llm.ToolChoiceMode(s)}
		case "any":
			return llm.ToolChoice{Mode: llm.ToolChoiceRequired}
		}
		return llm.ToolChoice{Mode: llm.ToolChoiceAuto}
	}
	if d.Null() {
		return llm.ToolChoice{}
	}
	var typ, name string
	for k := range d.Fields() {
		switch string(k) {
		case "type":
			typ = d.String()
		case "name":
			name = d.String()
		case "function", "custom":
			for k := range d.Fields() {
				if string(k) == "name" {
					name = d.String()
				}
			}
		}
	}
	switch typ {
	case "function", "tool", "custom":
		return llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}
	case "any":
		return llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	case "auto", "none":
		return llm.ToolChoice{Mode: llm.ToolChoiceMode(typ)}
	}
	return llm.ToolChoice{Mode: llm.ToolChoiceAuto}
}

func decodeStop(d *jsonr.Reader) []string {
	switch d.Peek() {
	case '"':
		return []string{d.String()}
	case 'n':
		d.Null()
		return nil
	}
	var out []string
	for range d.Elems() {
		out = append(out, d.String())
	}
	return out
}

func decodeStringMap(d *jsonr.Reader) map[string]string {
	if d.Null() {
		return nil
	}
	m := map[string]string{}
	for k := range d.Fields() {
		name := string(k)
		if d.Peek() == '"' {
			m[name] = d.String()
		}
	}
	return m
}

func decodeCache(d *jsonr.Reader) *llm.CacheControl {
	if d.Null() {
		return nil
	}
	c := &llm.CacheControl{}
	for k := range d.Fields() {
		if string(k) == "ttl" {
			c.TTL = d.String()
		}
	}
	return c
}

func optFloat(d *jsonr.Reader) *float64 {
	if d.Null() {
		return nil
	}
	v := d.Float()
	return &v
}

// decodeEffort applies a reasoning effort value; "none" turns reasoning
// off and an unknown value is a schema error.
func decodeEffort(s string, req *llm.Request, prefix string, errp *error) {
	switch e := llm.Effort(s); {
	case s == "":
	case s == "none":
		req.DisableReasoning = true
	case e.Valid():
		req.Reasoning = e
	default:
		*errp = schemaErr(prefix, "unsupported reasoning effort %q", s)
	}
}
