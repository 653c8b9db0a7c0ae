package google

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// Target is the surface a request is built for.
type Target struct {
	// CodeAssist is true for the Code Assist endpoint (Gemini CLI and
	// Antigravity OAuth credentials).
	CodeAssist bool
	// Antigravity selects the Antigravity flavour of Code Assist.
	Antigravity bool
}

// skipSignature is the placeholder thoughtSignature Gemini accepts on a
// replayed function call that has none: the base64
// of "skip_thought_signature_validator".
var skipSignature = base64.StdEncoding.EncodeToString([]byte("skip_thought_signature_validator"))

// nonVisionPlaceholder replaces images for models without image input.
const nonVisionPlaceholder = "[image omitted: model does not support vision]"

// forcedToolDirective restates a forced tool choice to Antigravity's Gemini
// routes, which ignore toolConfig (the reference does the same).
const forcedToolDirective = "TOOL-ONLY TURN. This turn accepts a tool call and nothing else; a text reply here is discarded unread and you will be re-prompted. Emit the tool call now."

// traits are the per-model wire switches of the reference compat table.
type traits struct {
	target        Target
	gemini3       bool // Gemini major version ≥ 3
	claude        bool // a Claude model behind Code Assist
	level         bool // thinking is set by level, not budget
	functionIDs   bool // functionCall / functionResponse carry ids
	skipSigAll    bool // every unsigned replayed call gets the placeholder
	skipSigFirst  bool // only the first call of a turn gets it
	multimodalFR  bool // images may go inside functionResponse.parts
	schema        SchemaDialect
	dropUnsigned  bool // drop thinking that has no usable signature
	acceptsImages bool
}

func traitsFor(model llm.Model, t Target) traits {
	id := model.WireID()
	tr := traits{target: t, acceptsImages: model.AcceptsImages()}
	tr.claude = strings.HasPrefix(id, "claude-")
	tr.gemini3 = geminiMajor(id) >= 3
	if model.Thinking != nil && model.Thinking.Mode != "" {
		tr.level = model.Thinking.Mode == "google-level"
	} else {
		tr.level = tr.gemini3
	}
	switch {
	case !t.CodeAssist:
		tr.functionIDs = tr.gemini3
		tr.skipSigAll = tr.gemini3
	default:
		tr.functionIDs = tr.claude
		tr.skipSigFirst = tr.gemini3
	}
	tr.multimodalFR = tr.gemini3 || tr.claude
	if t.Antigravity || (t.CodeAssist && tr.claude) {
		tr.schema = SchemaLegacy
	}
	tr.dropUnsigned = t.Antigravity && tr.claude
	return tr
}

// geminiMajor returns N of a "gemini-N…" model id, or 0.
func geminiMajor(id string) int {
	i := strings.Index(id, "gemini-")
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range id[i+len("gemini-"):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// BuildRequest translates a canonical request into a generateContent body
// for model on target t. Tool names Google
// would reject are rewritten; ToolName maps them back.
func BuildRequest(req *llm.Request, model llm.Model, t Target) (*GenerateContentRequest, error) {
	if req == nil {
		return nil, fmt.Errorf("google: nil request")
	}
	tr := traitsFor(model, t)
	out := &GenerateContentRequest{names: newNameMap()}
	b := builder{tr: tr, model: model, out: out}
	for i := range req.Tools {
		out.names.reserve(req.Tools[i].Name)
	}
	b.messages(req.Messages)
	b.system(req.System)
	if err := b.tools(req); err != nil {
		return nil, err
	}
	b.generation(req)
	if !t.CodeAssist && model.Provider == "google" {
		switch req.ServiceTier {
		case "flex", "priority":
			out.ServiceTier = req.ServiceTier
		}
	}
	return out, nil
}

// ToolName returns the canonical name of a function name used on the wire
// by this request.
func (r *GenerateContentRequest) ToolName(wire string) string {
	if r == nil || r.names == nil {
		return wire
	}
	return r.names.canonical(wire)
}

type builder struct {
	tr    traits
	model llm.Model
	out   *GenerateContentRequest
}

func (b *builder) push(role string, parts ...Part) {
	c := b.out.Contents
	if n := len(c); n > 0 && c[n-1].Role == role {
		c[n-1].Parts = append(c[n-1].Parts, parts...)
		return
	}
	b.out.Contents = append(c, Content{Role: role, Parts: parts})
}

func (b *builder) system(blocks []llm.SystemBlock) {
	var parts []Part
	for _, s := range blocks {
		if strings.TrimSpace(s.Text) != "" {
			parts = append(parts, Part{Text: s.Text})
		}
	}
	if len(parts) == 0 {
		return
	}
	sys := &Content{Parts: parts}
	if b.tr.target.Antigravity {
		sys.Role = "user"
	}
	b.out.SystemInstruction = sys
}

func (b *builder) image(c *llm.Content) Part {
	if c.Data == "" && c.URL() != "" {
		return Part{FileData: &FileData{MimeType: c.MimeType, FileURI: c.URL()}}
	}
	return Part{InlineData: &Blob{MimeType: c.MimeType, Data: c.Data}}
}

// pendingCall is a replayed function call waiting for its result.
type pendingCall struct {
	id, name, wire string
	result         *Part
}

func (b *builder) messages(msgs []llm.Message) {
	b.out.Contents = make([]Content, 0, len(msgs))
	var pending []pendingCall
	var toolImages []Part
	flush := func(synthesize bool) {
		if len(pending) == 0 {
			return
		}
		answered := false
		for i := range pending {
			answered = answered || pending[i].result != nil
		}
		if answered || synthesize {
			parts := make([]Part, 0, len(pending)+len(toolImages))
			for i := range pending {
				p := pending[i].result
				if p == nil {
					p = b.functionResponse(pending[i].id, pending[i].wire, "No result provided", true, nil)
				}
				parts = append(parts, *p)
			}
			b.push("user", append(parts, toolImages...)...)
		}
		pending, toolImages = pending[:0], nil
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Role != llm.RoleToolResult {
			flush(true)
		}
		switch m.Role {
		case llm.RoleUser, llm.RoleDeveloper:
			b.userMessage(m)
		case llm.RoleAssistant:
			pending = b.assistantMessage(m, pending[:0])
		case llm.RoleToolResult:
			b.toolResult(m, pending, &toolImages)
		}
	}
	flush(false)
}

func (b *builder) userMessage(m *llm.Message) {
	parts := make([]Part, 0, len(m.Content))
	omitted := false
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			if strings.TrimSpace(c.Text) != "" {
				parts = append(parts, Part{Text: c.Text})
			}
		case llm.ContentImage:
			if b.tr.acceptsImages {
				parts = append(parts, b.image(c))
			} else {
				omitted = true
			}
		}
	}
	if omitted {
		parts = append(parts, Part{Text: nonVisionPlaceholder})
	}
	if len(parts) > 0 {
		b.push("user", parts...)
	}
}

func (b *builder) assistantMessage(m *llm.Message, pending []pendingCall) []pendingCall {
	if (m.StopReason == llm.StopError || m.StopReason == llm.StopAborted || m.StopReason == llm.StopLength) &&
		!m.HasToolCall() && strings.TrimSpace(m.TextContent()) == "" {
		return pending // a truncated thinking-only turn has nothing to anchor on
	}
	// Signatures are bound to the provider and model that issued them. A
	// message decoded from a client wire knows only the API of the gateway
	// token it came in (no provider): that API must be this surface's.
	same := m.Provider == b.model.Provider && m.Model == b.model.ID ||
		m.Provider == "" && m.API == b.targetAPI()
	parts := make([]Part, 0, len(m.Content))
	firstCall := true
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			if strings.TrimSpace(c.Text) == "" {
				continue
			}
			p := Part{Text: c.Text}
			if sig, ok := b.signature(c.TextSignature(), same); ok {
				p.ThoughtSignature = sig
			}
			parts = append(parts, p)
		case llm.ContentThinking:
			if strings.TrimSpace(c.Thinking) == "" {
				continue
			}
			if sig, ok := b.signature(c.ThinkingSignature, same); ok {
				parts = append(parts, Part{Thought: true, Text: c.Thinking, ThoughtSignature: sig})
			} else if !b.tr.dropUnsigned {
				parts = append(parts, Part{Text: b.demote(c.Thinking)})
			}
		case llm.ContentToolCall:
			wire := b.out.names.wire(c.Name)
			fc := &FunctionCall{Name: wire, Args: c.Arguments}
			if len(fc.Args) == 0 {
				fc.Args = llm.FinalizeArguments(c.ArgumentsText)
			}
			if b.tr.functionIDs {
				fc.ID = normalizeID(c.ID)
			}
			p := Part{FunctionCall: fc}
			sig, signed := b.signature(c.ThoughtSignature(), same)
			switch {
			case signed:
				p.ThoughtSignature = sig
			case b.tr.skipSigAll || (b.tr.skipSigFirst && firstCall):
				p.ThoughtSignature = skipSignature
			}
			firstCall = false
			parts = append(parts, p)
			pending = append(pending, pendingCall{id: c.ID, name: c.Name, wire: wire})
		}
	}
	if len(parts) > 0 {
		b.push("model", parts...)
	}
	return pending
}

// signature returns the thoughtSignature to replay for a part, and whether
// there is one: a gateway token issued by this very surface
// (Gemini API or Code Assist) is unwrapped, any other token is foreign and
// dropped, and a raw signature is kept only when the message came from
// the same provider and model (same).
func (b *builder) signature(sig string, same bool) (string, bool) {
	if tok, api, ok := llm.DecodeSignatureToken(sig); ok {
		return tok, api == b.targetAPI() && validSignature(tok)
	}
	if llm.IsSignatureToken(sig) {
		return "", false
	}
	return sig, same && validSignature(sig)
}

// targetAPI is the API whose signatures this request may carry.
func (b *builder) targetAPI() string {
	if b.tr.target.CodeAssist {
		return llm.APIGeminiCLI
	}
	return llm.APIGoogle
}

// demote renders foreign reasoning as plain text in the model's dialect.
func (b *builder) demote(s string) string {
	if b.tr.claude {
		return s
	}
	return "```thinking\n" + s + "\n```"
}

func (b *builder) toolResult(m *llm.Message, pending []pendingCall, toolImages *[]Part) {
	slot := -1
	for i := range pending {
		if pending[i].result == nil && pending[i].id == m.ToolCallID {
			slot = i
			break
		}
	}
	if slot < 0 { // match same-name calls first-in-first-out
		for i := range pending {
			if pending[i].result == nil && pending[i].name == m.ToolName && m.ToolName != "" {
				slot = i
				break
			}
		}
	}
	if slot < 0 {
		return // an orphan result: its call is not in the history
	}
	var text strings.Builder
	var images []Part
	omitted := false
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(c.Text)
		case llm.ContentImage:
			if b.tr.acceptsImages {
				images = append(images, b.image(c))
			} else {
				omitted = true
			}
		}
	}
	value := text.String()
	switch {
	case omitted && value != "":
		value += "\n" + nonVisionPlaceholder
	case omitted:
		value = nonVisionPlaceholder
	case value == "" && len(images) > 0:
		value = "(see attached image)"
	}
	var inner []Part
	if len(images) > 0 && b.tr.multimodalFR {
		inner = images
	} else if len(images) > 0 {
		*toolImages = append(*toolImages, Part{Text: "Tool result image:"})
		*toolImages = append(*toolImages, images...)
	}
	pending[slot].result = b.functionResponse(pending[slot].id, pending[slot].wire, value, m.IsError, inner)
}

func (b *builder) functionResponse(id, wire, value string, isError bool, parts []Part) *Part {
	key := `{"output":`
	if isError {
		key = `{"error":`
	}
	resp := make([]byte, 0, len(key)+len(value)+8)
	resp = append(resp, key...)
	resp = jsonw.Plain(resp, value)
	resp = append(resp, '}')
	fr := &FunctionResponse{Name: wire, Response: resp, Parts: parts}
	if b.tr.functionIDs {
		fr.ID = normalizeID(id)
	}
	return &Part{FunctionResponse: fr}
}

// toolFunction is one functionDeclarations entry.
type toolFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

func (b *builder) tools(req *llm.Request) error {
	var decls []toolFunction
	for i := range req.Tools {
		t := &req.Tools[i]
		if len(t.Native) > 0 {
			if t.NativeAPI == llm.APIGoogle || t.NativeAPI == llm.APIGeminiCLI {
				b.out.Tools = append(b.out.Tools, t.Native)
			}
			continue
		}
		f := toolFunction{Name: b.out.names.wire(t.Name), Description: t.Description}
		schema := NormalizeSchema(t.Parameters, b.tr.schema)
		if b.tr.schema == SchemaLegacy {
			f.Parameters = schema
		} else {
			f.ParametersJSONSchema = schema
		}
		decls = append(decls, f)
	}
	if len(decls) > 0 {
		raw, err := json.Marshal(struct {
			FunctionDeclarations []toolFunction `json:"functionDeclarations"`
		}{decls})
		if err != nil {
			return fmt.Errorf("google: encode tools: %w", err)
		}
		b.out.Tools = append([]json.RawMessage{raw}, b.out.Tools...)
	}
	hasTools := len(decls) > 0
	if hasTools {
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceNone:
			b.toolMode("NONE")
		case llm.ToolChoiceRequired:
			b.toolMode("ANY")
		case llm.ToolChoiceTool:
			b.toolMode("ANY", b.out.names.wire(req.ToolChoice.Name))
		}
		if b.tr.target.Antigravity && !b.tr.claude && b.out.ToolConfig != nil &&
			b.out.ToolConfig.FunctionCallingConfig.Mode == "ANY" {
			b.push("user", Part{Text: forcedToolDirective})
		}
		if b.tr.target.Antigravity && b.out.ToolConfig == nil {
			b.toolMode("VALIDATED")
		}
	}
	if b.tr.target.Antigravity && b.tr.claude {
		b.toolMode("VALIDATED")
	}
	return nil
}

func (b *builder) toolMode(mode string, allowed ...string) {
	b.out.ToolConfig = &ToolConfig{FunctionCallingConfig{Mode: mode, AllowedFunctionNames: allowed}}
}
