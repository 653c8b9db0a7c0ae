package google

import (
	"encoding/json"
	"errors"

	"github.com/ompgo/omp/internal/jsonr"
)

// decodeInboundFast reads a generateContent body into in without
// encoding/json, which on a long conversation costs about twice as much
// (BenchmarkDecodeRequest300KB). It reads "contents" by hand, the bulk of
// a large body, and hands the small members (systemInstruction, tools,
// toolConfig, generationConfig, a part's functionCall args and
// functionResponse) to encoding/json one by one. It reports false, and
// the caller decodes the whole body with encoding/json, for anything whose
// result could differ: a JSON error, a null, a repeated key (in either
// spelling), a key that only matches a field case-insensitively, the
// countTokens wrapper. It reads proto-named keys as their JSON names, as
// normalizeKeys renames them for encoding/json. FuzzDecodeRequest checks
// that whatever it accepts, the fallback reads the same.
func decodeInboundFast(body []byte, in *inboundRequest) bool {
	r := jsonr.NewReader(body)
	if !r.BeginObject() {
		return false
	}
	seen := map[string]bool{}
	for r.More() {
		key := r.Key()
		if n, ok := types().request.proto[string(key)]; ok {
			key = []byte(n)
		}
		k := string(key)
		if r.Err() != nil || seen[k] || r.Peek() == 'n' {
			return false
		}
		seen[k] = true
		var err error
		switch k {
		case "contents":
			in.Contents, err = fastContents(r)
		case "systemInstruction":
			err = unmarshalMessage(r.Raw(), types().content, &in.SystemInstruction)
		case "tools":
			err = unmarshalMessage(r.Raw(), types().tool, &in.Tools)
		case "toolConfig":
			err = unmarshalMessage(r.Raw(), types().toolConfig, &in.ToolConfig)
		case "generationConfig":
			err = unmarshalMessage(r.Raw(), types().generation, &in.GenerationConfig)
		case "cachedContent":
			err = json.Unmarshal(r.Raw(), &in.CachedContent)
		default:
			if jsonr.FoldsTo(key, "contents", "systemInstruction", "tools", "toolConfig",
				"generationConfig", "cachedContent", "generateContentRequest") {
				return false
			}
			r.Skip()
		}
		if err != nil || r.Err() != nil {
			return false
		}
	}
	return r.End() == nil
}

// errDecline stops the fast path: encoding/json decides.
var errDecline = errors.New("google: the fast request reader declines")

func fastContents(r *jsonr.Reader) ([]inboundContent, error) {
	if !r.BeginArray() {
		return nil, errDecline
	}
	out := []inboundContent{}
	for r.More() {
		if !r.BeginObject() {
			return nil, errDecline
		}
		var c inboundContent
		seen := 0
		for r.More() {
			k := r.Key()
			if r.Err() != nil || r.Peek() == 'n' {
				return nil, errDecline
			}
			switch string(k) {
			case "role":
				if seen&1 != 0 || r.Peek() != '"' {
					return nil, errDecline
				}
				seen |= 1
				c.Role = r.String()
			case "parts":
				if seen&2 != 0 {
					return nil, errDecline
				}
				seen |= 2
				parts, err := fastParts(r)
				if err != nil {
					return nil, err
				}
				c.Parts = parts
			default:
				if jsonr.FoldsTo(k, "role", "parts") {
					return nil, errDecline
				}
				r.Skip()
			}
		}
		if r.Err() != nil {
			return nil, errDecline
		}
		out = append(out, c)
	}
	return out, r.Err()
}

func fastParts(r *jsonr.Reader) ([]inboundPart, error) {
	if !r.BeginArray() {
		return nil, errDecline
	}
	out := []inboundPart{}
	for r.More() {
		p, err := fastPart(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, r.Err()
}

// partKeys are the part members encoding/json would fill, in the order of
// fastPart's bits.
var partKeys = []string{"text", "thought", "thoughtSignature", "inlineData", "fileData",
	"functionCall", "functionResponse", "executableCode", "codeExecutionResult"}

func fastPart(r *jsonr.Reader) (inboundPart, error) {
	var p inboundPart
	if !r.BeginObject() {
		return p, errDecline
	}
	var seen uint
	for r.More() {
		k := r.Key()
		if r.Err() != nil || r.Peek() == 'n' {
			return p, errDecline
		}
		if n, ok := types().part.proto[string(k)]; ok {
			k = []byte(n)
		}
		bit := uint(0)
		for i, name := range partKeys {
			if string(k) == name {
				bit = 1 << i
			}
		}
		if seen&bit != 0 {
			return p, errDecline
		}
		seen |= bit
		var err error
		switch string(k) {
		case "text":
			if r.Peek() != '"' {
				return p, errDecline
			}
			p.Text = r.String()
		case "thought":
			if c := r.Peek(); c != 't' && c != 'f' {
				return p, errDecline
			}
			p.Thought = r.Bool()
		case "thoughtSignature":
			if r.Peek() != '"' {
				return p, errDecline
			}
			p.ThoughtSignature = r.String()
		case "inlineData":
			p.InlineData, err = fastBlob(r)
		case "fileData":
			err = unmarshalMessage(r.Raw(), types().file, &p.FileData)
		case "functionCall":
			err = unmarshalMessage(r.Raw(), types().call, &p.FunctionCall)
		case "functionResponse":
			err = unmarshalMessage(r.Raw(), types().response, &p.FunctionResponse)
		case "executableCode":
			err = json.Unmarshal(r.Raw(), &p.ExecutableCode)
		case "codeExecutionResult":
			err = json.Unmarshal(r.Raw(), &p.CodeExecutionResult)
		default:
			if jsonr.FoldsTo(k, partKeys...) {
				return p, errDecline
			}
			r.Skip()
		}
		if err != nil || r.Err() != nil {
			return p, errDecline
		}
	}
	return p, r.Err()
}

// fastBlob reads inlineData, whose base64 data can be most of a body.
func fastBlob(r *jsonr.Reader) (*Blob, error) {
	if !r.BeginObject() {
		return nil, errDecline
	}
	b := &Blob{}
	seen := 0
	for r.More() {
		k := r.Key()
		if r.Err() != nil || r.Peek() != '"' {
			return nil, errDecline
		}
		if n, ok := types().blob.proto[string(k)]; ok {
			k = []byte(n)
		}
		switch string(k) {
		case "mimeType":
			if seen&1 != 0 {
				return nil, errDecline
			}
			seen |= 1
			b.MimeType = r.String()
		case "data":
			if seen&2 != 0 {
				return nil, errDecline
			}
			seen |= 2
			b.Data = r.String()
		default:
			if jsonr.FoldsTo(k, "mimeType", "data") {
				return nil, errDecline
			}
			r.Skip()
		}
	}
	return b, r.Err()
}
