package pinative

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
)

// errSlow makes the fast decoder hand the body to the encoding/json path.
var errSlow = errSyntax

// decodeFast decodes a well-formed body in one pass. It returns errSlow
// (and no request) for anything it does not handle exactly like
// decodeSlow: malformed JSON, unexpected types, validation failures.
func decodeFast(body []byte) (*Request, error) {
	// One copy of the body backs every unescaped string of the request.
	l := lexer{b: body, s: string(body)}
	out := &Request{Stream: true}
	r := &out.Canonical
	var modelID, modelStr, modelObjID string
	var haveContext, haveMessages, systemBad, toolsBad bool
	var toolsRaw, optionsRaw []byte
	err := l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "modelId":
			if l.peek() != '"' {
				_, err = l.skip()
				return err
			}
			modelID, err = l.str()
		case "model":
			switch l.peek() {
			case '"':
				modelStr, err = l.str()
			case '{':
				err = l.object(func(k []byte) error {
					if string(k) == "id" && l.peek() == '"' {
						var err error
						modelObjID, err = l.str()
						return err
					}
					_, err := l.skip()
					return err
				})
			default:
				_, err = l.skip()
			}
		case "stream":
			var raw []byte
			if raw, err = l.skip(); err == nil && len(raw) > 0 && (raw[0] == 't' || raw[0] == 'f') {
				out.Stream = raw[0] == 't'
			}
		case "options":
			optionsRaw, err = l.skip()
		case "context":
			if l.peek() != '{' {
				return errSlow
			}
			haveContext = true
			err = l.object(func(k []byte) error {
				switch string(k) {
				case "messages":
					if l.peek() != '[' {
						return errSlow
					}
					haveMessages = true
					r.Messages = make([]llm.Message, 0, 16)
					return l.array(func() error { return l.message(r) })
				case "systemPrompt":
					if l.peek() != '[' {
						systemBad = true
						_, err := l.skip()
						return err
					}
					r.System = make([]llm.SystemBlock, 0, 4)
					return l.array(func() error {
						if c := l.peek(); c != '"' && c != 'n' {
							return errSlow
						}
						s, err := l.str()
						r.System = append(r.System, llm.SystemBlock{Text: s})
						return err
					})
				case "tools":
					var err error
					toolsRaw, err = l.skip()
					toolsBad = len(toolsRaw) > 0 && toolsRaw[0] != '['
					return err
				}
				if foldsTo(k, "messages", "systemPrompt", "tools") {
					return errSlow
				}
				_, err := l.skip()
				return err
			})
		default:
			if foldsTo(k, "modelId", "model", "stream", "options", "context") {
				return errSlow
			}
			_, err = l.skip()
		}
		return err
	})
	if err != nil || l.peek() != 0 || !haveContext || !haveMessages || systemBad || toolsBad {
		return nil, errSlow
	}
	switch {
	case modelID != "":
		out.ModelID = modelID
	case modelStr != "":
		out.ModelID = modelStr
	default:
		out.ModelID = modelObjID
	}
	if out.ModelID == "" {
		return nil, errSlow
	}
	r.Model, r.Stream, r.OriginAPI = out.ModelID, out.Stream, llm.APIPi
	if len(toolsRaw) > 0 && toolsRaw[0] == '[' {
		var tools []wireTool
		if err := json.Unmarshal(toolsRaw, &tools); err != nil {
			return nil, errSlow
		}
		r.Tools = make([]llm.Tool, len(tools))
		for i, t := range tools {
			r.Tools[i] = llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters,
				Strict: t.Strict, Custom: len(t.CustomFormat) > 0, CustomFormat: t.CustomFormat,
				CustomWireName: t.CustomWireName}
		}
	}
	if len(optionsRaw) > 0 && optionsRaw[0] == '{' {
		if err := decodeOptions(optionsRaw, r); err != nil {
			return nil, errSlow
		}
	}
	return out, nil
}

func (l *lexer) message(r *llm.Request) error {
	if l.peek() != '{' {
		return errSlow
	}
	var m llm.Message
	var contentRaw bool
	var content []llm.Content
	err := l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "role":
			var s string
			s, err = l.str()
			m.Role = llm.Role(s)
		case "content":
			contentRaw = true
			content, err = l.content()
		case "toolCallId":
			m.ToolCallID, err = l.str()
		case "toolName":
			m.ToolName, err = l.str()
		case "isError":
			m.IsError, err = l.boolean()
		case "timestamp":
			var f float64
			f, err = l.number()
			m.Timestamp = int64(f)
		case "api":
			m.API, err = l.str()
		case "provider":
			m.Provider, err = l.str()
		case "model":
			m.Model, err = l.str()
		case "responseId":
			m.ResponseID, err = l.str()
		case "stopReason":
			var s string
			s, err = l.str()
			m.StopReason = llm.StopReason(s)
		case "errorMessage":
			m.ErrorMessage, err = l.str()
		case "errorStatus":
			var n int64
			n, err = l.integer()
			m.ErrorStatus = int(n)
		case "usage":
			err = l.usage(&m.Usage)
		default:
			if foldsTo(k, messageKeys...) {
				return errSlow
			}
			_, err = l.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	switch m.Role {
	case llm.RoleUser, llm.RoleDeveloper, llm.RoleToolResult:
		m.API, m.Provider, m.Model, m.ResponseID = "", "", "", ""
		m.StopReason, m.ErrorMessage, m.ErrorStatus, m.Usage = "", "", 0, llm.Usage{}
	case llm.RoleAssistant:
	default:
		return errSlow
	}
	if contentRaw {
		m.Content = content
	}
	r.Messages = append(r.Messages, m)
	return nil
}

func (l *lexer) usage(u *llm.Usage) error {
	if l.peek() == 'n' {
		return l.literal("null")
	}
	return l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "input":
			u.Input, err = l.integer()
		case "output":
			u.Output, err = l.integer()
		case "cacheRead":
			u.CacheRead, err = l.integer()
		case "cacheWrite":
			u.CacheWrite, err = l.integer()
		case "reasoningTokens":
			u.Reasoning, err = l.integer()
		case "totalTokens":
			_, err = l.skip()
		case "cost":
			if l.peek() == 'n' {
				return l.literal("null")
			}
			err = l.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "input":
					u.Cost.Input, err = l.number()
				case "output":
					u.Cost.Output, err = l.number()
				case "cacheRead":
					u.Cost.CacheRead, err = l.number()
				case "cacheWrite":
					u.Cost.CacheWrite, err = l.number()
				case "total":
					u.Cost.Total, err = l.number()
				default:
					return errSlow // encoding/json matches keys case-insensitively
				}
				return err
			})
		default:
			if foldsTo(k, "input", "output", "cacheRead", "cacheWrite", "reasoningTokens", "cost") {
				return errSlow
			}
			_, err = l.skip()
		}
		return err
	})
}

// content reads a string or an array of blocks, as decodeContent does.
func (l *lexer) content() ([]llm.Content, error) {
	switch l.peek() {
	case 'n':
		return nil, l.literal("null")
	case '"':
		s, err := l.str()
		return []llm.Content{llm.Text(s)}, err
	case '[':
		out := make([]llm.Content, 0, 2)
		err := l.array(func() error {
			c, keep, err := l.block()
			if keep {
				out = append(out, c)
			}
			return err
		})
		return out, err
	}
	return nil, errSlow
}

// block reads one content block; keep is false for a block of an unknown
// (non-empty) type, which is skipped.
func (l *lexer) block() (c llm.Content, keep bool, err error) {
	if l.peek() != '{' {
		return c, false, errSlow
	}
	var typ string
	var args, raw []byte
	err = l.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "type":
			typ, err = l.str()
		case "text":
			c.Text, err = l.str()
		case "textSignature":
			c.TextSignature, err = l.str()
		case "thinking":
			c.Thinking, err = l.str()
		case "thinkingSignature":
			c.ThinkingSignature, err = l.str()
		case "itemId":
			c.ItemID, err = l.str()
		case "data":
			c.Data, err = l.str()
		case "mimeType":
			c.MimeType, err = l.str()
		case "url":
			c.URL, err = l.str()
		case "detail":
			c.Detail, err = l.str()
		case "id":
			c.ID, err = l.str()
		case "name":
			c.Name, err = l.str()
		case "thoughtSignature":
			c.ThoughtSignature, err = l.str()
		case "customWireName":
			c.CustomWireName, err = l.str()
		case "api":
			c.NativeAPI, err = l.str()
		case "arguments":
			args, err = l.skip()
		case "raw":
			raw, err = l.skip()
		default:
			if foldsTo(k, blockKeys...) {
				return errSlow
			}
			_, err = l.skip()
		}
		return err
	})
	if err != nil {
		return c, false, err
	}
	c.Type = llm.ContentType(typ)
	switch c.Type {
	case llm.ContentText, llm.ContentThinking, llm.ContentRedactedThinking, llm.ContentImage, llm.ContentNative:
	case llm.ContentToolCall:
		if len(args) > 0 && args[0] == 'n' {
			args = nil
		}
		c.Arguments, c.ArgumentsText = llm.NormalizeArguments(args)
	default:
		if typ == "" {
			return c, false, errSlow
		}
		return llm.Content{}, false, nil
	}
	if len(raw) > 0 {
		c.Raw = append(json.RawMessage(nil), raw...)
	}
	return c, true, nil
}

var (
	messageKeys = []string{"role", "content", "toolCallId", "toolName", "isError", "timestamp", "api", "provider",
		"model", "responseId", "stopReason", "errorMessage", "errorStatus", "usage"}
	blockKeys = []string{"type", "text", "textSignature", "thinking", "thinkingSignature", "itemId", "data",
		"mimeType", "url", "detail", "id", "name", "thoughtSignature", "customWireName", "api", "arguments", "raw"}
)

// foldsTo reports whether an unknown key equals a known one but for case:
// encoding/json would match it, so the fast path must defer.
func foldsTo(k []byte, known ...string) bool {
	for _, n := range known {
		if len(n) == len(k) && strings.EqualFold(n, string(k)) {
			return true
		}
	}
	return false
}
