package google

import (
	"encoding/json"
	"strings"
	"sync"
)

// SchemaDialect says which Google schema surface a tool schema targets.
type SchemaDialect uint8

// Schema dialects.
const (
	// SchemaJSON is the parametersJsonSchema path of the Gemini API and of
	// Gemini models on Code Assist: JSON Schema minus the keywords Google
	// rejects.
	SchemaJSON SchemaDialect = iota
	// SchemaLegacy is the OpenAPI-subset "parameters" path (Claude and
	// Antigravity on Code Assist): no nullable, no type arrays, no
	// combiners; a schema that still has them becomes an empty object.
	SchemaLegacy
)

// unsupportedFields are the keywords Google rejects (reference
// UNSUPPORTED_SCHEMA_FIELDS); never matched against property names.
var unsupportedFields = map[string]bool{
	"$schema": true, "$ref": true, "$defs": true, "definitions": true, "$dynamicRef": true, "$dynamicAnchor": true,
	"$id": true, "examples": true, "prefixItems": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"patternProperties": true, "additionalProperties": true, "propertyNames": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"pattern": true, "format": true, "dependencies": true, "dependentSchemas": true, "dependentRequired": true,
	"x-mcp-header": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// liftable keywords are spilled into the description when stripped, so the
// model still sees the constraint.
var liftable = map[string]bool{
	"pattern": true, "format": true, "minLength": true, "maxLength": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "minItems": true, "maxItems": true,
	"examples": true,
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaCache memoizes NormalizeSchema: agents send the same tools on every
// turn. It is bounded; past the bound results are simply not cached.
var schemaCache struct {
	sync.Mutex
	m map[schemaKey]json.RawMessage
}

type schemaKey struct {
	d   SchemaDialect
	raw string
}

const schemaCacheMax = 4096

// NormalizeSchema rewrites a tool's JSON Schema for Google: local $refs are
// inlined, unsupported keywords dropped (the
// human-meaningful ones spilled into description as {key: value}), type
// arrays and "null" types turned into nullable, const into enum, bare
// string enums typed, object nodes given properties and the root made an
// object. SchemaLegacy also folds combiners and nullability. Invalid input
// yields the empty object schema, never an error.
func NormalizeSchema(raw json.RawMessage, d SchemaDialect) json.RawMessage {
	if len(raw) == 0 {
		return emptyObjectSchema
	}
	key := schemaKey{d, string(raw)}
	schemaCache.Lock()
	out, ok := schemaCache.m[key]
	schemaCache.Unlock()
	if ok {
		return out
	}
	out = normalizeSchema(raw, d)
	schemaCache.Lock()
	if schemaCache.m == nil {
		schemaCache.m = make(map[schemaKey]json.RawMessage)
	}
	if len(schemaCache.m) < schemaCacheMax {
		schemaCache.m[key] = out
	}
	schemaCache.Unlock()
	return out
}

func normalizeSchema(raw json.RawMessage, d SchemaDialect) json.RawMessage {
	tree, err := parseTree(raw)
	if err != nil {
		return emptyObjectSchema
	}
	root, ok := tree.(*object)
	if !ok {
		return emptyObjectSchema
	}
	n := &normalizer{d: d, defs: newObject()}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := root.vals[k].(*object); ok {
			for _, name := range defs.keys {
				n.defs.set("#/"+k+"/"+name, defs.vals[name])
			}
		}
	}
	node := n.node(root, 0)
	if node == nil {
		return emptyObjectSchema
	}
	node = n.foldCombiners(node, 0) // the root must be one object
	if t := node.str("type"); t == "" {
		node.set("type", "object")
	} else if t != "object" {
		return emptyObjectSchema
	}
	if _, ok := node.vals["properties"]; !ok {
		node.set("properties", newObject())
	}
	if d == SchemaLegacy && n.residual(node, 0) {
		return emptyObjectSchema
	}
	return appendTree(nil, node)
}

type normalizer struct {
	d    SchemaDialect
	defs *object // "#/$defs/X" → schema
}

// node normalizes one schema node; it returns nil for unusable input.
func (n *normalizer) node(v any, depth int) *object {
	if depth > maxDepth {
		return nil
	}
	src, ok := v.(*object)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return newObject() // true/false subschemas become "any"
		}
		return nil
	}
	// Inline a local $ref (siblings override the target).
	if ref := src.str("$ref"); ref != "" {
		if target, ok := n.defs.vals[ref].(*object); ok && depth < 16 {
			merged := newObject()
			for _, k := range target.keys {
				merged.set(k, target.vals[k])
			}
			for _, k := range src.keys {
				if k != "$ref" {
					merged.set(k, src.vals[k])
				}
			}
			src = merged
		}
	}
	out := newObject()
	var spill []string
	nullable := false
	for _, k := range src.keys {
		val := src.vals[k]
		if unsupportedFields[k] {
			if liftable[k] {
				spill = append(spill, k+": "+string(appendTree(nil, val)))
			}
			continue
		}
		switch k {
		case "type":
			switch t := val.(type) {
			case string:
				if t == "null" {
					nullable = true
					continue
				}
				out.set("type", t)
			case []any:
				var types []string
				for _, e := range t {
					if s, ok := e.(string); ok {
						if s == "null" {
							nullable = true
						} else {
							types = append(types, s)
						}
					}
				}
				switch {
				case len(types) == 1 || (len(types) > 1 && n.d == SchemaLegacy):
					out.set("type", types[0])
				case len(types) > 1:
					alts := make([]any, len(types))
					for i, s := range types {
						alt := newObject()
						alt.set("type", s)
						alts[i] = alt
					}
					out.set("anyOf", alts)
				}
			}
		case "const":
			out.set("enum", []any{val})
		case "enum":
			if arr, ok := val.([]any); ok {
				if _, has := src.vals["const"]; !has {
					out.set("enum", arr)
				}
			}
		case "nullable":
			if b, _ := val.(bool); b {
				nullable = true
			}
		case "properties":
			props, ok := val.(*object)
			if !ok {
				continue
			}
			np := newObject()
			for _, name := range props.keys {
				if c := n.node(props.vals[name], depth+1); c != nil {
					np.set(name, c)
				}
			}
			out.set("properties", np)
		case "items", "not", "if", "then", "else", "contains", "additionalItems":
			if c := n.node(val, depth+1); c != nil {
				c.del("x-nullable")
				out.set(k, c)
			}
		case "anyOf", "oneOf", "allOf":
			arr, ok := val.([]any)
			if !ok {
				continue
			}
			alts := make([]any, 0, len(arr))
			for _, e := range arr {
				if c := n.node(e, depth+1); c != nil {
					if c.str("type") == "" && len(c.keys) == 1 && (c.vals["nullable"] == true || c.vals["x-nullable"] == true) {
						nullable = true // a {"type":"null"} branch
						continue
					}
					alts = append(alts, c)
				}
			}
			if len(alts) > 0 {
				out.set(k, alts)
			}
		default:
			out.set(k, val)
		}
	}
	// Enums must be strings on Google: keep a string enum, spill another.
	if arr, ok := out.vals["enum"].([]any); ok {
		allStrings := len(arr) > 0
		for _, e := range arr {
			if _, ok := e.(string); !ok {
				allStrings = false
			}
		}
		if !allStrings {
			out.del("enum")
			spill = append(spill, "enum: "+string(appendTree(nil, arr)))
		} else if out.str("type") == "" {
			out.set("type", "string")
		}
	}
	if out.str("type") == "object" {
		if _, ok := out.vals["properties"]; !ok {
			out.set("properties", newObject())
		}
	}
	n.fixRequired(out)
	if len(spill) > 0 {
		s := "{" + strings.Join(spill, ", ") + "}"
		if d := out.str("description"); d != "" {
			s = d + "\n\n" + s
		}
		out.set("description", s)
	}
	if n.d == SchemaLegacy {
		out = n.foldCombiners(out, depth)
		out.del("not")
		if out.str("type") == "object" {
			n.dropNullableRequired(out)
		}
		if nullable {
			out.set("x-nullable", true) // marker for the parent, removed there
		}
	} else if nullable {
		out.set("nullable", true)
	}
	return out
}

// fixRequired keeps only required names that are declared properties.
func (n *normalizer) fixRequired(o *object) {
	req, ok := o.vals["required"].([]any)
	if !ok {
		if _, has := o.vals["required"]; has {
			o.del("required")
		}
		return
	}
	props, _ := o.vals["properties"].(*object)
	keep := make([]any, 0, len(req))
	for _, r := range req {
		s, ok := r.(string)
		if !ok {
			continue
		}
		if props != nil {
			if _, ok := props.vals[s]; !ok {
				continue
			}
		}
		keep = append(keep, s)
	}
	if len(keep) == 0 {
		o.del("required")
		return
	}
	o.set("required", keep)
}

// dropNullableRequired removes the legacy nullable markers of o's
// properties and takes those properties out of required.
func (n *normalizer) dropNullableRequired(o *object) {
	props, _ := o.vals["properties"].(*object)
	if props == nil {
		return
	}
	nullable := map[string]bool{}
	for _, name := range props.keys {
		if p, ok := props.vals[name].(*object); ok && p.vals["x-nullable"] == true {
			p.del("x-nullable")
			nullable[name] = true
		}
	}
	if req, ok := o.vals["required"].([]any); ok && len(nullable) > 0 {
		keep := req[:0:0]
		for _, r := range req {
			if s, _ := r.(string); !nullable[s] {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			o.del("required")
		} else {
			o.set("required", keep)
		}
	}
}

// foldCombiners collapses anyOf/oneOf/allOf into o: all-object variants are
// merged (properties united, required intersected for unions), otherwise
// the first variant wins. The JSON dialect folds only at the root, where
// Google needs a single object.
func (n *normalizer) foldCombiners(o *object, depth int) *object {
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		arr, ok := o.vals[k].([]any)
		if !ok {
			continue
		}
		if n.d == SchemaJSON && depth > 0 {
			continue
		}
		o.del(k)
		var objs []*object
		for _, e := range arr {
			if c, ok := e.(*object); ok {
				objs = append(objs, c)
			}
		}
		if len(objs) == 0 {
			continue
		}
		allObjects := true
		for _, c := range objs {
			if t := c.str("type"); t != "object" && !(t == "" && c.vals["properties"] != nil) {
				allObjects = false
			}
		}
		if !allObjects {
			mergeInto(o, objs[0], false)
			continue
		}
		props := newObject()
		if p, ok := o.vals["properties"].(*object); ok {
			props = p
		}
		var required []any
		for i, c := range objs {
			if p, ok := c.vals["properties"].(*object); ok {
				for _, name := range p.keys {
					if _, dup := props.vals[name]; !dup {
						props.set(name, p.vals[name])
					}
				}
			}
			r, _ := c.vals["required"].([]any)
			switch {
			case k == "allOf":
				required = append(required, r...)
			case i == 0:
				required = append(required, r...)
			default:
				required = intersect(required, r)
			}
			if o.str("description") == "" && c.str("description") != "" {
				o.set("description", c.str("description"))
			}
		}
		o.set("type", "object")
		o.set("properties", props)
		if len(required) > 0 {
			o.set("required", required)
		}
	}
	return o
}

func mergeInto(dst, src *object, overwrite bool) {
	for _, k := range src.keys {
		if _, has := dst.vals[k]; has && !overwrite {
			continue
		}
		dst.set(k, src.vals[k])
	}
}

func intersect(a, b []any) []any {
	var out []any
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// residual reports a legacy-dialect schema that still has a construct the
// legacy surface rejects.
func (n *normalizer) residual(v any, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch v := v.(type) {
	case *object:
		for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "nullable", "x-nullable"} {
			if _, ok := v.vals[k]; ok {
				return true
			}
		}
		if t, ok := v.vals["type"]; ok {
			if s, ok := t.(string); !ok || s == "null" {
				return true
			}
		}
		if p, ok := v.vals["properties"].(*object); ok {
			for _, name := range p.keys {
				if n.residual(p.vals[name], depth+1) {
					return true
				}
			}
		}
		if it, ok := v.vals["items"]; ok && n.residual(it, depth+1) {
			return true
		}
	}
	return false
}
