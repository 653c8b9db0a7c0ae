package pinative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ompgo/omp/pkg/llm"
)

// RequestError is a body the codec rejects. Message is the exact text for
// the 400 invalid_request_error envelope.
type RequestError struct {
	Message string
	Err     error
}

func (e *RequestError) Error() string { return e.Message }

// Unwrap returns the underlying decode error, if any.
func (e *RequestError) Unwrap() error { return e.Err }

// Validation messages of the pi-native endpoint, as the reference words them.
const (
	msgNotObject    = "Request body must be a JSON object"
	msgNoModel      = "Missing `modelId` (or `model.id`) field"
	msgNoContext    = "Missing `context` object"
	msgMessages     = "`context.messages` must be an array"
	msgSystemPrompt = "`context.systemPrompt` must be an array of strings when present"
	msgTools        = "`context.tools` must be an array when present"
)

// Request is a decoded pi-native request.
type Request struct {
	// ModelID is the model the client selected (modelId, model or
	// model.id).
	ModelID string
	// Stream is the stream flag (default true).
	Stream bool
	// Canonical is the request; its Model and Stream mirror the fields
	// above, OriginAPI is llm.APIPi and Extra holds the allow-listed
	// options without a canonical slot.
	Canonical llm.Request
}

type wireBody struct {
	ModelID json.RawMessage `json:"modelId"`
	Model   json.RawMessage `json:"model"`
	Context json.RawMessage `json:"context"`
	Options json.RawMessage `json:"options"`
	Stream  json.RawMessage `json:"stream"`
}

type wireContext struct {
	SystemPrompt json.RawMessage `json:"systemPrompt"`
	Messages     json.RawMessage `json:"messages"`
	Tools        json.RawMessage `json:"tools"`
}

type wireMessage struct {
	Role         llm.Role        `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Timestamp    float64         `json:"timestamp"`
	API          string          `json:"api"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	ResponseID   string          `json:"responseId"`
	Usage        *wireUsage      `json:"usage"`
	StopReason   llm.StopReason  `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ErrorStatus  int             `json:"errorStatus"`
}

type wireUsage struct {
	Input           int64 `json:"input"`
	Output          int64 `json:"output"`
	CacheRead       int64 `json:"cacheRead"`
	CacheWrite      int64 `json:"cacheWrite"`
	ReasoningTokens int64 `json:"reasoningTokens"`
	Cost            struct {
		Input, Output, CacheRead, CacheWrite, Total float64
	} `json:"cost"`
}

type wireTool struct {
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Parameters     json.RawMessage `json:"parameters"`
	Strict         *bool           `json:"strict"`
	CustomFormat   json.RawMessage `json:"customFormat"`
	CustomWireName string          `json:"customWireName"`
}

// DecodeRequest parses a pi-native body. Validation follows the reference:
// only the shape the gateway reads is checked, unknown fields are ignored,
// and options outside the allow-list are dropped. Every failure is a
// *RequestError.
func DecodeRequest(body []byte) (*Request, error) {
	if r, err := decodeFast(body); err == nil {
		return r, nil
	}
	return decodeSlow(body)
}

// decodeSlow is the encoding/json decoder; it defines the behaviour the
// fast path must reproduce and produces every error message.
func decodeSlow(body []byte) (*Request, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		if len(body) > 0 && !json.Valid(body) {
			return nil, invalidJSON(json.Unmarshal(body, new(any)))
		}
		return nil, &RequestError{Message: msgNotObject}
	}
	var w wireBody
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, invalidJSON(err)
	}
	out := &Request{Stream: true}
	out.ModelID = modelID(w)
	if out.ModelID == "" {
		return nil, &RequestError{Message: msgNoModel}
	}
	if kind(w.Context) != '{' {
		return nil, &RequestError{Message: msgNoContext}
	}
	var ctx wireContext
	if err := json.Unmarshal(w.Context, &ctx); err != nil {
		return nil, &RequestError{Message: msgNoContext, Err: err}
	}
	if kind(ctx.Messages) != '[' {
		return nil, &RequestError{Message: msgMessages}
	}
	if len(ctx.SystemPrompt) > 0 && kind(ctx.SystemPrompt) != '[' {
		return nil, &RequestError{Message: msgSystemPrompt}
	}
	if len(ctx.Tools) > 0 && kind(ctx.Tools) != '[' {
		return nil, &RequestError{Message: msgTools}
	}
	if k := kind(w.Stream); k == 't' || k == 'f' {
		out.Stream = k == 't'
	}
	r := &out.Canonical
	r.Model, r.Stream, r.OriginAPI = out.ModelID, out.Stream, llm.APIPi
	if len(ctx.SystemPrompt) > 0 {
		var sys []string
		if err := json.Unmarshal(ctx.SystemPrompt, &sys); err != nil {
			return nil, &RequestError{Message: msgSystemPrompt, Err: err}
		}
		r.System = make([]llm.SystemBlock, len(sys))
		for i, s := range sys {
			r.System[i].Text = s
		}
	}
	if err := decodeMessages(ctx.Messages, r); err != nil {
		return nil, err
	}
	if len(ctx.Tools) > 0 {
		var tools []wireTool
		if err := json.Unmarshal(ctx.Tools, &tools); err != nil {
			return nil, &RequestError{Message: "`context.tools` is malformed: " + err.Error(), Err: err}
		}
		r.Tools = make([]llm.Tool, len(tools))
		for i, t := range tools {
			r.Tools[i] = llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters,
				Strict: t.Strict, Custom: len(t.CustomFormat) > 0, CustomFormat: t.CustomFormat,
				CustomWireName: t.CustomWireName}
		}
	}
	if kind(w.Options) == '{' {
		if err := decodeOptions(w.Options, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func invalidJSON(err error) error {
	return &RequestError{Message: fmt.Sprintf("Invalid JSON body: %v", err), Err: err}
}

// kind returns the first byte of a raw JSON value ('{', '[', '"', 't',
// 'f', 'n', a digit or '-'), or 0 when absent.
func kind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func modelID(w wireBody) string {
	var s string
	if kind(w.ModelID) == '"' && json.Unmarshal(w.ModelID, &s) == nil && s != "" {
		return s
	}
	switch kind(w.Model) {
	case '"':
		if json.Unmarshal(w.Model, &s) == nil && s != "" {
			return s
		}
	case '{':
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(w.Model, &m) == nil && kind(m.ID) == '"' && json.Unmarshal(m.ID, &s) == nil {
			return s
		}
	}
	return ""
}

func decodeMessages(raw json.RawMessage, r *llm.Request) error {
	var msgs []wireMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return &RequestError{Message: "`context.messages` is malformed: " + err.Error(), Err: err}
	}
	r.Messages = make([]llm.Message, 0, len(msgs))
	for i := range msgs {
		w := &msgs[i]
		m := llm.Message{Role: w.Role, ToolCallID: w.ToolCallID, ToolName: w.ToolName, IsError: w.IsError,
			Timestamp: int64(w.Timestamp)}
		switch w.Role {
		case llm.RoleUser, llm.RoleDeveloper, llm.RoleToolResult:
		case llm.RoleAssistant:
			m.API, m.Provider, m.Model, m.ResponseID = w.API, w.Provider, w.Model, w.ResponseID
			m.StopReason, m.ErrorMessage, m.ErrorStatus = w.StopReason, w.ErrorMessage, w.ErrorStatus
			if u := w.Usage; u != nil {
				m.Usage = llm.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead,
					CacheWrite: u.CacheWrite, Reasoning: u.ReasoningTokens,
					Cost: llm.Cost{Input: u.Cost.Input, Output: u.Cost.Output, CacheRead: u.Cost.CacheRead,
						CacheWrite: u.Cost.CacheWrite, Total: u.Cost.Total}}
			}
		default:
			return &RequestError{Message: "`context.messages[" + strconv.Itoa(i) + "].role` is not a known role"}
		}
		content, err := decodeContent(w.Content)
		if err != nil {
			return &RequestError{Message: "`context.messages[" + strconv.Itoa(i) + "].content` is malformed: " + err.Error(), Err: err}
		}
		m.Content = content
		r.Messages = append(r.Messages, m)
	}
	return nil
}

// decodeContent reads a string or an array of blocks. Blocks of unknown
// type are skipped (newer clients may send more kinds).
func decodeContent(raw json.RawMessage) ([]llm.Content, error) {
	switch kind(raw) {
	case 0, 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []llm.Content{llm.Text(s)}, nil
	case '[':
		var blocks []llm.Content
		if err := json.Unmarshal(raw, &blocks); err == nil {
			return blocks, nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		blocks = make([]llm.Content, 0, len(items))
		for _, it := range items {
			var c llm.Content
			if err := json.Unmarshal(it, &c); err != nil {
				var probe struct {
					Type string `json:"type"`
				}
				if json.Unmarshal(it, &probe) == nil && probe.Type != "" && !knownType(probe.Type) {
					continue
				}
				return nil, err
			}
			blocks = append(blocks, c)
		}
		return blocks, nil
	}
	return nil, fmt.Errorf("want a string or an array")
}

func knownType(t string) bool {
	switch llm.ContentType(t) {
	case llm.ContentText, llm.ContentImage, llm.ContentThinking, llm.ContentRedactedThinking,
		llm.ContentToolCall, llm.ContentNative:
		return true
	}
	return false
}
