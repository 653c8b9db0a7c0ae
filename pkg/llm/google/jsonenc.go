package google

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
)

// Hand-written encoding of the request body: encoding/json re-validates
// and compacts every json.RawMessage (tool results, arguments, schemas),
// which alone costs milliseconds on a long agent conversation.

// AppendJSON appends the JSON body of r to dst.
func (r *GenerateContentRequest) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"contents":[`...)
	for i := range r.Contents {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendContent(dst, &r.Contents[i])
	}
	dst = append(dst, ']')
	if r.SystemInstruction != nil {
		dst = append(dst, `,"systemInstruction":`...)
		dst = appendContent(dst, r.SystemInstruction)
	}
	if len(r.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTrustedJSON(dst, t)
		}
		dst = append(dst, ']')
	}
	if r.ToolConfig != nil {
		fc := &r.ToolConfig.FunctionCallingConfig
		dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":`...)
		dst = jsonw.Plain(dst, fc.Mode)
		if len(fc.AllowedFunctionNames) > 0 {
			dst = append(dst, `,"allowedFunctionNames":`...)
			dst = appendStrings(dst, fc.AllowedFunctionNames)
		}
		dst = append(dst, `}}`...)
	}
	if g := r.GenerationConfig; g != nil {
		dst = appendGeneration(dst, g)
	}
	if r.ServiceTier != "" {
		dst = append(dst, `,"serviceTier":`...)
		dst = jsonw.Plain(dst, r.ServiceTier)
	}
	if r.SessionID != "" {
		dst = append(dst, `,"sessionId":`...)
		dst = jsonw.Plain(dst, r.SessionID)
	}
	if len(r.Labels) > 0 {
		b, _ := json.Marshal(r.Labels) // sorted keys; small
		dst = append(dst, `,"labels":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}')
}

func appendGeneration(dst []byte, g *GenerationConfig) []byte {
	dst = append(dst, `,"generationConfig":{`...)
	n := len(dst)
	sep := func(dst []byte) []byte {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		return dst
	}
	if g.Temperature != nil {
		dst = append(dst, `"temperature":`...)
		dst = appendNumber(dst, *g.Temperature)
	}
	if g.TopP != nil {
		dst = append(sep(dst), `"topP":`...)
		dst = appendNumber(dst, *g.TopP)
	}
	if g.TopK != nil {
		dst = append(sep(dst), `"topK":`...)
		dst = strconv.AppendInt(dst, int64(*g.TopK), 10)
	}
	if g.MaxOutputTokens > 0 {
		dst = append(sep(dst), `"maxOutputTokens":`...)
		dst = strconv.AppendInt(dst, int64(g.MaxOutputTokens), 10)
	}
	if len(g.StopSequences) > 0 {
		dst = append(sep(dst), `"stopSequences":`...)
		dst = appendStrings(dst, g.StopSequences)
	}
	if tc := g.ThinkingConfig; tc != nil {
		dst = append(sep(dst), `"thinkingConfig":{"includeThoughts":`...)
		dst = strconv.AppendBool(dst, tc.IncludeThoughts)
		if tc.ThinkingBudget != nil {
			dst = append(dst, `,"thinkingBudget":`...)
			dst = strconv.AppendInt(dst, int64(*tc.ThinkingBudget), 10)
		}
		if tc.ThinkingLevel != "" {
			dst = append(dst, `,"thinkingLevel":`...)
			dst = jsonw.Plain(dst, tc.ThinkingLevel)
		}
		dst = append(dst, '}')
	}
	if g.ResponseMimeType != "" {
		dst = append(sep(dst), `"responseMimeType":`...)
		dst = jsonw.Plain(dst, g.ResponseMimeType)
	}
	if len(g.ResponseSchema) > 0 {
		dst = append(sep(dst), `"responseSchema":`...)
		dst = appendTrustedJSON(dst, g.ResponseSchema)
	}
	if len(g.ResponseJSONSchema) > 0 {
		dst = append(sep(dst), `"responseJsonSchema":`...)
		dst = appendTrustedJSON(dst, g.ResponseJSONSchema)
	}
	return append(dst, '}')
}

func appendContent(dst []byte, c *Content) []byte {
	dst = append(dst, '{')
	if c.Role != "" {
		dst = append(dst, `"role":`...)
		dst = jsonw.Plain(dst, c.Role)
		dst = append(dst, ',')
	}
	dst = append(dst, `"parts":`...)
	dst = appendParts(dst, c.Parts)
	return append(dst, '}')
}

func appendParts(dst []byte, parts []Part) []byte {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPart(dst, &parts[i])
	}
	return append(dst, ']')
}

func appendPart(dst []byte, p *Part) []byte {
	dst = append(dst, '{')
	n := len(dst)
	field := func(dst []byte, name string) []byte {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		return append(dst, '"', ':')
	}
	if p.Text != "" {
		dst = jsonw.Plain(field(dst, "text"), p.Text)
	}
	if p.Thought {
		dst = append(field(dst, "thought"), "true"...)
	}
	if p.ThoughtSignature != "" {
		dst = jsonw.Plain(field(dst, "thoughtSignature"), p.ThoughtSignature)
	}
	if b := p.InlineData; b != nil {
		dst = append(field(dst, "inlineData"), `{"mimeType":`...)
		dst = jsonw.Plain(dst, b.MimeType)
		dst = append(dst, `,"data":`...)
		dst = jsonw.Plain(dst, b.Data)
		dst = append(dst, '}')
	}
	if f := p.FileData; f != nil {
		dst = append(field(dst, "fileData"), '{')
		if f.MimeType != "" {
			dst = append(dst, `"mimeType":`...)
			dst = jsonw.Plain(dst, f.MimeType)
			dst = append(dst, ',')
		}
		dst = append(dst, `"fileUri":`...)
		dst = jsonw.Plain(dst, f.FileURI)
		dst = append(dst, '}')
	}
	if fc := p.FunctionCall; fc != nil {
		dst = append(field(dst, "functionCall"), '{')
		if fc.ID != "" {
			dst = append(dst, `"id":`...)
			dst = jsonw.Plain(dst, fc.ID)
			dst = append(dst, ',')
		}
		dst = append(dst, `"name":`...)
		dst = jsonw.Plain(dst, fc.Name)
		dst = append(dst, `,"args":`...)
		dst = appendRawJSON(dst, fc.Args, "{}")
		dst = append(dst, '}')
	}
	if fr := p.FunctionResponse; fr != nil {
		dst = append(field(dst, "functionResponse"), '{')
		if fr.ID != "" {
			dst = append(dst, `"id":`...)
			dst = jsonw.Plain(dst, fr.ID)
			dst = append(dst, ',')
		}
		dst = append(dst, `"name":`...)
		dst = jsonw.Plain(dst, fr.Name)
		dst = append(dst, `,"response":`...)
		dst = appendTrustedJSON(dst, fr.Response)
		if len(fr.Parts) > 0 {
			dst = append(dst, `,"parts":`...)
			dst = appendParts(dst, fr.Parts)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonw.Plain(dst, s)
	}
	return append(dst, ']')
}

func appendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// appendRawJSON appends a raw JSON value the translator produced or took
// from the canonical request (arguments, schemas, tool results). Invalid
// input is replaced by fallback so the body stays well formed.
func appendRawJSON(dst []byte, raw json.RawMessage, fallback string) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return append(dst, fallback...)
	}
	return append(dst, raw...)
}

// appendTrustedJSON appends JSON this package built itself (tool
// declarations, function responses); only emptiness is checked.
func appendTrustedJSON(dst []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(dst, "{}"...)
	}
	return append(dst, raw...)
}
