package google

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// The inbound half: a client speaking the Gemini API (generateContent,
// streamGenerateContent, countTokens) to the gateway. DecodeRequest turns
// its body into the canonical request; inbound_encode.go renders the
// canonical events back as GenerateContentResponse objects.

// inboundRequest is a generateContent body as a client sends it. Fields
// the canonical request has no place for (safetySettings, labels) are
// accepted and ignored.
type inboundRequest struct {
	Contents          []inboundContent             `json:"contents"`
	SystemInstruction *inboundContent              `json:"systemInstruction"`
	Tools             []map[string]json.RawMessage `json:"tools"`
	ToolConfig        *ToolConfig                  `json:"toolConfig"`
	GenerationConfig  *inboundGenerationConfig     `json:"generationConfig"`
	// CachedContent names server-side cached content, which the gateway
	// does not have: such a request is refused.
	CachedContent string `json:"cachedContent"`
	// GenerateContentRequest is countTokens' wrapped form.
	GenerateContentRequest *inboundRequest `json:"generateContentRequest"`
}

// inboundContent is one turn as a client sends it.
type inboundContent struct {
	Role  string        `json:"role"`
	Parts []inboundPart `json:"parts"`
}

// inboundPart is a part: the kinds the gateway reads, and the code
// execution kinds, which it refuses.
type inboundPart struct {
	Part
	ExecutableCode      json.RawMessage `json:"executableCode"`
	CodeExecutionResult json.RawMessage `json:"codeExecutionResult"`
}

// inboundGenerationConfig is generationConfig; topK is a number there.
type inboundGenerationConfig struct {
	Temperature        *float64               `json:"temperature"`
	TopP               *float64               `json:"topP"`
	TopK               *float64               `json:"topK"`
	MaxOutputTokens    int                    `json:"maxOutputTokens"`
	StopSequences      []string               `json:"stopSequences"`
	CandidateCount     int                    `json:"candidateCount"`
	ThinkingConfig     *inboundThinkingConfig `json:"thinkingConfig"`
	ResponseMimeType   string                 `json:"responseMimeType"`
	ResponseSchema     json.RawMessage        `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage        `json:"responseJsonSchema"`
}

// inboundThinkingConfig is generationConfig.thinkingConfig.
type inboundThinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts"`
	ThinkingBudget  *int   `json:"thinkingBudget"`
	ThinkingLevel   string `json:"thinkingLevel"`
}

// functionDeclaration is one entry of tools[].functionDeclarations.
type functionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// Extra keys of a request decoded from the Gemini API: the structured
// output settings, which only a Gemini upstream can honour.
const (
	ExtraResponseMimeType   = "responseMimeType"
	ExtraResponseSchema     = "responseSchema"
	ExtraResponseJSONSchema = "responseJsonSchema"
)

// DecodeRequest decodes a generateContent body into the canonical request.
// The model and the stream flag are in the URL, not the body: the caller
// sets Request.Model and Request.Stream. A body the gateway cannot serve is
// an *llm.InvalidRequestError whose message says what is wrong.
func DecodeRequest(body []byte) (*llm.Request, error) {
	var in inboundRequest
	if !decodeInboundFast(body, &in) {
		in = inboundRequest{}
		if err := decodeInboundPlain(body, &in); err != nil {
			return nil, err
		}
	}
	if in.GenerateContentRequest != nil {
		in = *in.GenerateContentRequest
	}
	if in.CachedContent != "" {
		return nil, llm.InvalidRequestf("cachedContent is not supported: send the contents themselves")
	}
	req := &llm.Request{OriginAPI: llm.APIGoogle}
	decodeSystem(req, in.SystemInstruction)
	msgs, err := decodeContents(in.Contents)
	if err != nil {
		return nil, err
	}
	req.Messages = msgs
	if err := decodeTools(req, in.Tools); err != nil {
		return nil, err
	}
	if err := decodeToolConfig(req, in.ToolConfig); err != nil {
		return nil, err
	}
	if err := decodeGeneration(req, in.GenerationConfig); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeInboundPlain reads a generateContent body into in with
// encoding/json, after renaming its proto-named keys.
func decodeInboundPlain(body []byte, in *inboundRequest) error {
	body, err := normalizeKeys(body, types().request)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, in); err != nil {
		return &llm.InvalidRequestError{Message: "Invalid JSON payload received: " + jsonProblem(err), Err: err}
	}
	return nil
}

// jsonProblem is the client-facing text of a JSON decoding error.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + strconv.Quote(te.Field) + " has the wrong type (got " + te.Value + ")"
	}
	return err.Error()
}

// decodeSystem keeps the text parts of the system instruction, one
// system block each.
func decodeSystem(req *llm.Request, c *inboundContent) {
	if c == nil {
		return
	}
	for i := range c.Parts {
		p := &c.Parts[i]
		if p.Text == "" {
			continue
		}
		req.System = append(req.System, llm.SystemBlock{Text: p.Text})
	}
}

// inboundCall is a model function call of the previous turn that a
// functionResponse may answer.
type inboundCall struct {
	id, name string
	answered bool
}

// decodeContents turns the turns into canonical messages. A model turn is
// one assistant message; a user turn's functionResponse parts become tool
// results (matched to the previous model turn's calls by id, else by name
// in order) and its other parts one user message after them.
func decodeContents(contents []inboundContent) ([]llm.Message, error) {
	msgs := make([]llm.Message, 0, len(contents))
	var calls []inboundCall
	nextID := 0
	for i := range contents {
		c := &contents[i]
		switch c.Role {
		case "model":
			m, err := decodeModelTurn(c, i, &nextID)
			if err != nil {
				return nil, err
			}
			calls = calls[:0]
			for j := range m.Content {
				if b := &m.Content[j]; b.Type == llm.ContentToolCall {
					calls = append(calls, inboundCall{id: b.ID, name: b.Name})
				}
			}
			if len(m.Content) > 0 {
				msgs = append(msgs, m)
			}
		case "user", "function", "":
			var user llm.Message
			user.Role = llm.RoleUser
			for j := range c.Parts {
				p := &c.Parts[j]
				if fr := p.FunctionResponse; fr != nil {
					tr, err := decodeFunctionResponse(fr, calls, i, j)
					if err != nil {
						return nil, err
					}
					msgs = append(msgs, tr)
					continue
				}
				b, ok, err := decodeUserPart(p, i, j)
				if err != nil {
					return nil, err
				}
				if ok {
					user.Content = append(user.Content, b)
				}
			}
			if len(user.Content) > 0 {
				msgs = append(msgs, user)
			}
		default:
			return nil, llm.InvalidRequestf("contents[%d].role: %q is not a role (use \"user\" or \"model\")", i, c.Role)
		}
	}
	return msgs, nil
}

func decodeUserPart(p *inboundPart, i, j int) (llm.Content, bool, error) {
	switch {
	case p.InlineData != nil:
		if !strings.HasPrefix(p.InlineData.MimeType, "image/") {
			return llm.Content{}, false, llm.InvalidRequestf("contents[%d].parts[%d].inlineData: mimeType %q is not supported (images only)", i, j, p.InlineData.MimeType)
		}
		if p.InlineData.Data == "" {
			return llm.Content{}, false, llm.InvalidRequestf("contents[%d].parts[%d].inlineData.data is empty", i, j)
		}
		return llm.Image(p.InlineData.MimeType, p.InlineData.Data), true, nil
	case p.FileData != nil:
		if !strings.HasPrefix(p.FileData.MimeType, "image/") {
			return llm.Content{}, false, llm.InvalidRequestf("contents[%d].parts[%d].fileData: mimeType %q is not supported (images only)", i, j, p.FileData.MimeType)
		}
		c := llm.Content{Type: llm.ContentImage, MimeType: p.FileData.MimeType}
		c.SetURL(p.FileData.FileURI)
		return c, true, nil
	case p.FunctionCall != nil:
		return llm.Content{}, false, llm.InvalidRequestf("contents[%d].parts[%d]: a functionCall belongs in a \"model\" turn", i, j)
	case len(p.ExecutableCode) > 0 || len(p.CodeExecutionResult) > 0:
		return llm.Content{}, false, llm.InvalidRequestf("contents[%d].parts[%d]: code execution parts are not supported", i, j)
	case p.Text != "":
		return llm.Text(p.Text), true, nil
	}
	return llm.Content{}, false, nil
}

// decodeModelTurn decodes a model turn into an assistant message. Thought
// parts are thinking blocks; a thoughtSignature stays on the part it came
// with, and a part that carries only a signature signs the block before it.
func decodeModelTurn(c *inboundContent, i int, nextID *int) (llm.Message, error) {
	m := llm.Message{Role: llm.RoleAssistant, API: llm.APIGoogle, StopReason: llm.StopEnd}
	for j := range c.Parts {
		p := &c.Parts[j]
		sig := clientSignatureIn(p.ThoughtSignature)
		switch {
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			if fc.Name == "" {
				return m, llm.InvalidRequestf("contents[%d].parts[%d].functionCall.name is required", i, j)
			}
			id := fc.ID
			if id == "" {
				*nextID++
				id = "call_gemini_" + strconv.Itoa(*nextID)
			}
			args := bytes.TrimSpace(fc.Args)
			if len(args) == 0 || string(args) == "null" {
				args = []byte("{}")
			}
			if args[0] != '{' {
				return m, llm.InvalidRequestf("contents[%d].parts[%d].functionCall.args must be an object", i, j)
			}
			b := llm.ToolCall(id, fc.Name, json.RawMessage(args))
			if sig != "" {
				b.SetThoughtSignature(sig)
			}
			m.Content = append(m.Content, b)
			m.StopReason = llm.StopToolUse
		case p.Text != "" && p.Thought:
			m.Content = append(m.Content, llm.Content{Type: llm.ContentThinking, Thinking: p.Text, ThinkingSignature: sig})
		case p.Text != "":
			b := llm.Text(p.Text)
			if sig != "" {
				b.SetTextSignature(sig)
			}
			m.Content = append(m.Content, b)
		case sig != "" && len(m.Content) > 0:
			last := &m.Content[len(m.Content)-1]
			switch last.Type {
			case llm.ContentThinking:
				if last.ThinkingSignature == "" {
					last.ThinkingSignature = sig
				}
			case llm.ContentText:
				if last.TextSignature() == "" {
					last.SetTextSignature(sig)
				}
			}
		case p.InlineData != nil || p.FileData != nil:
			return m, llm.InvalidRequestf("contents[%d].parts[%d]: media in a \"model\" turn is not supported", i, j)
		}
		// A turn whose signatures are another provider's gateway tokens
		// was produced by that provider: its upstream may replay it.
		if _, api, ok := llm.DecodeSignatureToken(sig); ok {
			m.API = api
		}
	}
	return m, nil
}

// decodeFunctionResponse turns a functionResponse into a tool result. Its
// text is the response's "output" (or "error", which marks the result
// failed) when that is a string, else the response object as JSON.
func decodeFunctionResponse(fr *FunctionResponse, calls []inboundCall, i, j int) (llm.Message, error) {
	if fr.Name == "" {
		return llm.Message{}, llm.InvalidRequestf("contents[%d].parts[%d].functionResponse.name is required", i, j)
	}
	m := llm.Message{Role: llm.RoleToolResult, ToolName: fr.Name}
	slot := -1
	for k := range calls {
		if !calls[k].answered && fr.ID != "" && calls[k].id == fr.ID {
			slot = k
			break
		}
	}
	if slot < 0 {
		for k := range calls {
			if !calls[k].answered && calls[k].name == fr.Name {
				slot = k
				break
			}
		}
	}
	switch {
	case slot >= 0:
		calls[slot].answered = true
		m.ToolCallID = calls[slot].id
	case fr.ID != "":
		m.ToolCallID = fr.ID
	default:
		return llm.Message{}, llm.InvalidRequestf("contents[%d].parts[%d].functionResponse: no functionCall named %q in the previous model turn", i, j, fr.Name)
	}
	text, isError, err := responseText(fr.Response)
	if err != nil {
		return llm.Message{}, llm.InvalidRequestf("contents[%d].parts[%d].functionResponse.response must be an object", i, j)
	}
	m.IsError = isError
	if text != "" {
		m.Content = append(m.Content, llm.Text(text))
	}
	for k := range fr.Parts {
		if d := fr.Parts[k].InlineData; d != nil && strings.HasPrefix(d.MimeType, "image/") {
			m.Content = append(m.Content, llm.Image(d.MimeType, d.Data))
		}
	}
	return m, nil
}

func responseText(raw json.RawMessage) (text string, isError bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", false, err
	}
	if len(obj) == 1 {
		for k, v := range obj {
			var s string
			if (k == "output" || k == "error") && json.Unmarshal(v, &s) == nil {
				return s, k == "error", nil
			}
		}
	}
	_, isError = obj["error"]
	return string(raw), isError, nil
}

// clientSignatureIn is the canonical form of a thoughtSignature a client
// sent back. A signature that another provider issued went out base64
// encoded around its gateway token (see clientSignatureOut); it comes back
// as that token. A Gemini signature is kept as it is.
func clientSignatureIn(sig string) string {
	if sig == "" {
		return ""
	}
	if b, err := base64.StdEncoding.DecodeString(sig); err == nil && llm.IsSignatureToken(string(b)) {
		return string(b)
	}
	return sig
}

func decodeGeneration(req *llm.Request, g *inboundGenerationConfig) error {
	if g == nil {
		return nil
	}
	if g.CandidateCount > 1 {
		return llm.InvalidRequestf("generationConfig.candidateCount: only 1 candidate is supported")
	}
	if g.MaxOutputTokens < 0 {
		return llm.InvalidRequestf("generationConfig.maxOutputTokens must not be negative")
	}
	req.Temperature, req.TopP = g.Temperature, g.TopP
	if g.TopK != nil {
		k := int(*g.TopK)
		req.TopK = &k
	}
	req.MaxTokens = g.MaxOutputTokens
	req.StopSequences = g.StopSequences
	if t := g.ThinkingConfig; t != nil {
		switch lvl := strings.ToLower(t.ThinkingLevel); lvl {
		case "", "thinking_level_unspecified":
		case "minimal", "low", "medium", "high":
			req.Reasoning = llm.Effort(lvl)
		default:
			return llm.InvalidRequestf("generationConfig.thinkingConfig.thinkingLevel: %q is not a level (MINIMAL, LOW, MEDIUM, HIGH)", t.ThinkingLevel)
		}
		if b := t.ThinkingBudget; b != nil {
			switch {
			case *b == 0:
				req.DisableReasoning = true
			case *b > 0:
				req.ThinkingBudget = *b
				req.Reasoning = llm.EffortForBudget(*b)
			default:
				req.Reasoning = llm.EffortForBudget(*b)
			}
		}
		switch {
		case t.IncludeThoughts == nil:
		case !*t.IncludeThoughts:
			req.HideThinkingSummary = true
		case req.Reasoning == llm.EffortNone && !req.DisableReasoning:
			// Thoughts asked for without a budget or level: the model's
			// dynamic thinking, which is medium effort elsewhere.
			req.Reasoning = llm.EffortMedium
		}
	}
	extra := map[string]json.RawMessage{}
	if g.ResponseMimeType != "" {
		extra[ExtraResponseMimeType], _ = json.Marshal(g.ResponseMimeType)
	}
	for key, raw := range map[string]json.RawMessage{ExtraResponseSchema: g.ResponseSchema, ExtraResponseJSONSchema: g.ResponseJSONSchema} {
		if len(raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return llm.InvalidRequestf("generationConfig.%s: %v", key, err)
		}
		extra[key] = b.Bytes()
	}
	if len(extra) > 0 {
		req.Extra = extra
	}
	return nil
}
