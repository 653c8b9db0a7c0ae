package google

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// The tools of a Gemini API request: function declarations (their
// parameters given as a Gemini Schema or as JSON Schema) and the tool
// config, decoded into the canonical request.

func decodeTools(req *llm.Request, tools []map[string]json.RawMessage) error {
	for i, t := range tools {
		rest := map[string]json.RawMessage{}
		for k, v := range t {
			if k != "functionDeclarations" {
				rest[k] = v
				continue
			}
			var decls []functionDeclaration
			if err := json.Unmarshal(v, &decls); err != nil {
				return llm.InvalidRequestf("tools[%d].functionDeclarations: %s", i, jsonProblem(err))
			}
			for j := range decls {
				d := &decls[j]
				if d.Name == "" {
					return llm.InvalidRequestf("tools[%d].functionDeclarations[%d].name is required", i, j)
				}
				tool := llm.Tool{Name: d.Name, Description: d.Description}
				switch {
				case len(d.ParametersJSONSchema) > 0:
					tool.Parameters = d.ParametersJSONSchema
				case len(d.Parameters) > 0:
					p, err := openAPIToJSONSchema(d.Parameters)
					var twice *bothSpellingsError
					switch {
					case errors.As(err, &twice):
						return llm.InvalidRequestf("tools[%d].functionDeclarations[%d].parameters: %v", i, j, err)
					case err != nil:
						return llm.InvalidRequestf("tools[%d].functionDeclarations[%d].parameters must be a schema object", i, j)
					}
					tool.Parameters = p
				}
				req.Tools = append(req.Tools, tool)
			}
		}
		if len(rest) > 0 {
			raw, err := json.Marshal(rest)
			if err != nil {
				return llm.InvalidRequestf("tools[%d]: %v", i, err)
			}
			req.Tools = append(req.Tools, llm.Tool{Name: firstKey(rest), Native: raw, NativeAPI: llm.APIGoogle})
		}
	}
	return nil
}

func firstKey(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return ""
	}
	best := keys[0]
	for _, k := range keys[1:] {
		if k < best {
			best = k
		}
	}
	return best
}

// openAPIToJSONSchema rewrites a Gemini Schema (the OpenAPI subset, with
// upper-case type names and "nullable") as JSON Schema, which every other
// upstream takes: type names in lower case, nullable as a "null" type,
// keywords given by their proto names ("any_of") by their JSON names.
func openAPIToJSONSchema(raw json.RawMessage) (json.RawMessage, error) {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if err := fixSchema(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// schemaMessage lists the Schema keywords whose proto name differs from
// their JSON name.
var schemaMessage = newMessage("parameters", []string{"minItems", "maxItems", "minLength", "maxLength",
	"minProperties", "maxProperties", "anyOf", "propertyOrdering"}, nil)

// bothSpellingsError is a Schema keyword given by its proto name and its
// JSON name.
type bothSpellingsError struct{ proto, name string }

func (e *bothSpellingsError) Error() string {
	return strconv.Quote(e.proto) + " and " + strconv.Quote(e.name) + " are the same field: send one of them"
}

func fixSchema(s map[string]any) error {
	for proto, name := range schemaMessage.proto {
		v, ok := s[proto]
		if !ok {
			continue
		}
		if _, ok := s[name]; ok {
			return &bothSpellingsError{proto: proto, name: name}
		}
		delete(s, proto)
		s[name] = v
	}
	if t, ok := s["type"].(string); ok {
		t = strings.ToLower(t)
		if t == "type_unspecified" {
			delete(s, "type")
		} else if n, _ := s["nullable"].(bool); n {
			s["type"] = []any{t, "null"}
		} else {
			s["type"] = t
		}
	}
	delete(s, "nullable")
	var subs []map[string]any
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				subs = append(subs, m)
			}
		}
	}
	if m, ok := s["items"].(map[string]any); ok {
		subs = append(subs, m)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := s[k].([]any); ok {
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					subs = append(subs, m)
				}
			}
		}
	}
	for _, m := range subs {
		if err := fixSchema(m); err != nil {
			return err
		}
	}
	return nil
}

func decodeToolConfig(req *llm.Request, tc *ToolConfig) error {
	if tc == nil {
		return nil
	}
	fc := tc.FunctionCallingConfig
	switch strings.ToUpper(fc.Mode) {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		req.ToolChoice.Mode = llm.ToolChoiceAuto
	case "NONE":
		req.ToolChoice.Mode = llm.ToolChoiceNone
	case "ANY":
		req.ToolChoice.Mode = llm.ToolChoiceRequired
		if len(fc.AllowedFunctionNames) == 1 {
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: fc.AllowedFunctionNames[0]}
		}
	default:
		return llm.InvalidRequestf("toolConfig.functionCallingConfig.mode: %q is not a mode (AUTO, ANY, NONE, VALIDATED)", fc.Mode)
	}
	return nil
}
