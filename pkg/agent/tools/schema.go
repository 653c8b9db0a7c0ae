package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// schema is the JSON Schema subset the built-in tools use: type,
// properties, required, items, enum, minItems, minimum, maximum,
// additionalProperties (false or a schema).
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	Enum                 []any              `json:"enum"`
	MinItems             *int               `json:"minItems"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
}

// validate checks args against the raw schema and returns one line per
// problem, "<field>: <message>".
func validate(raw json.RawMessage, args map[string]any, strict bool) []string {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return []string{"tool schema is invalid: " + err.Error()}
	}
	var out []string
	s.check("", args, strict, &out)
	return out
}

func (s *schema) check(path string, v any, strict bool, out *[]string) {
	name := path
	if name == "" {
		name = "arguments"
	}
	bad := func(format string, a ...any) { *out = append(*out, name+": "+fmt.Sprintf(format, a...)) }
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("must be an object")
			return
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				*out = append(*out, join(path, r)+": is required (was missing)")
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				p.check(join(path, k), m[k], strict, out)
			} else if strict || string(s.AdditionalProperties) == "false" {
				*out = append(*out, join(path, k)+": unknown property")
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("must be an array")
			return
		}
		if s.MinItems != nil && len(a) < *s.MinItems {
			bad("must have at least %d item(s)", *s.MinItems)
		}
		if s.Items != nil {
			for i, x := range a {
				s.Items.check(fmt.Sprintf("%s[%d]", name, i), x, strict, out)
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			bad("must be a string")
			return
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok {
			bad("must be a number")
			return
		}
		if s.Type == "integer" && f != float64(int64(f)) {
			bad("must be an integer")
		}
		if s.Minimum != nil && f < *s.Minimum {
			bad("must be >= %v", *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			bad("must be <= %v", *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("must be a boolean")
			return
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		bad("must be one of %v", s.Enum)
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
