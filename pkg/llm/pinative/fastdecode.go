package pinative

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/internal/toolargs"
)

// errSlow makes the fast decoder hand the body to the encoding/json path.
var errSlow = errors.New("pinative: fast path declined")

// decodeFast decodes a well-formed body in one pass on the shared reader
// (encoding/json re-scans a 300 KB agent request about ten times:
// RawMessage fields, custom unmarshalers). It returns errSlow (and no
// request) for anything it does not handle exactly like decodeSlow:
// malformed JSON, unexpected types, validation failures.
func decodeFast(body []byte) (*Request, error) {
	// One private copy of the body backs every string and raw part of the
	// request, so the caller may reuse body afterwards.
	f := fastPool.Get().(*fast)
	defer f.release()
	f.r = jsonr.NewReader(bytes.Clone(body))
	l := f.r
	out := &Request{Stream: true}
	r := &out.Canonical
	var modelID, modelStr, modelObjID string
	var haveContext, haveMessages, systemBad, toolsBad bool
	var toolsRaw, optionsRaw []byte
	err := l.Object(func(k []byte) error {
		switch string(k) {
		case "modelId":
			if l.Peek() != '"' {
				l.Skip()
				return nil
			}
			modelID = l.String()
		case "model":
			switch l.Peek() {
			case '"':
				modelStr = l.String()
			case '{':
				return l.Object(func(k []byte) error {
					if string(k) == "id" && l.Peek() == '"' {
						modelObjID = l.String()
					} else {
						l.Skip()
					}
					return nil
				})
			default:
				l.Skip()
			}
		case "stream":
			if raw := l.Raw(); len(raw) > 0 && (raw[0] == 't' || raw[0] == 'f') {
				out.Stream = raw[0] == 't'
			}
		case "options":
			optionsRaw = l.Raw()
		case "context":
			if l.Peek() != '{' {
				return errSlow
			}
			haveContext = true
			return l.Object(func(k []byte) error {
				switch string(k) {
				case "messages":
					if l.Peek() != '[' {
						return errSlow
					}
					haveMessages = true
					f.msgs = f.msgs[:0]
					err := l.Array(func() error { return f.message() })
					r.Messages = append(make([]llm.Message, 0, len(f.msgs)), f.msgs...)
					return err
				case "systemPrompt":
					if l.Peek() != '[' {
						systemBad = true
						l.Skip()
						return nil
					}
					r.System = make([]llm.SystemBlock, 0, 4)
					return l.Array(func() error {
						if c := l.Peek(); c != '"' && c != 'n' {
							return errSlow
						}
						r.System = append(r.System, llm.SystemBlock{Text: l.String()})
						return nil
					})
				case "tools":
					toolsRaw = l.Raw()
					toolsBad = len(toolsRaw) > 0 && toolsRaw[0] != '['
					return nil
				}
				if jsonr.FoldsTo(k, "messages", "systemPrompt", "tools") {
					return errSlow
				}
				l.Skip()
				return nil
			})
		default:
			if jsonr.FoldsTo(k, "modelId", "model", "stream", "options", "context") {
				return errSlow
			}
			l.Skip()
		}
		return nil
	})
	if err != nil || l.End() != nil || !haveContext || !haveMessages || systemBad || toolsBad {
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

// fast is the state of one fast decode; its staging buffers are pooled.
type fast struct {
	r *jsonr.Reader
	// msgs and blocks stage the messages and one message's blocks; the
	// request gets exact copies.
	msgs   []llm.Message
	blocks []llm.Content
}

var fastPool = sync.Pool{New: func() any { return new(fast) }}

// release drops every reference into the request and pools f.
func (f *fast) release() {
	clear(f.msgs[:cap(f.msgs)])
	clear(f.blocks[:cap(f.blocks)])
	*f = fast{msgs: f.msgs[:0], blocks: f.blocks[:0]}
	fastPool.Put(f)
}

func (f *fast) message() error {
	l := f.r
	if l.Peek() != '{' {
		return errSlow
	}
	var m llm.Message
	var contentRaw bool
	var content []llm.Content
	err := l.Object(func(k []byte) error {
		switch string(k) {
		case "role":
			m.Role = llm.Role(l.String())
		case "content":
			contentRaw = true
			content = f.content()
		case "toolCallId":
			m.ToolCallID = l.String()
		case "toolName":
			m.ToolName = l.String()
		case "isError":
			m.IsError = l.Bool()
		case "timestamp":
			m.Timestamp = int64(l.Float())
		case "api":
			m.API = l.String()
		case "provider":
			m.Provider = l.String()
		case "model":
			m.Model = l.String()
		case "responseId":
			m.ResponseID = l.String()
		case "stopReason":
			m.StopReason = llm.StopReason(l.String())
		case "errorMessage":
			m.ErrorMessage = l.String()
		case "errorStatus":
			m.ErrorStatus = int(l.IntExact())
		case "usage":
			return usage(l, &m.Usage)
		default:
			if jsonr.FoldsTo(k, messageKeys...) {
				return errSlow
			}
			l.Skip()
		}
		return nil
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
	f.msgs = append(f.msgs, m)
	return nil
}

func usage(l *jsonr.Reader, u *llm.Usage) error {
	if l.Null() {
		return nil
	}
	return l.Object(func(k []byte) error {
		switch string(k) {
		case "input":
			u.Input = l.IntExact()
		case "output":
			u.Output = l.IntExact()
		case "cacheRead":
			u.CacheRead = l.IntExact()
		case "cacheWrite":
			u.CacheWrite = l.IntExact()
		case "reasoningTokens":
			u.Reasoning = l.IntExact()
		case "totalTokens":
			l.Skip()
		case "cost":
			if l.Null() {
				return nil
			}
			return l.Object(func(k []byte) error {
				switch string(k) {
				case "input":
					u.Cost.Input = l.Float()
				case "output":
					u.Cost.Output = l.Float()
				case "cacheRead":
					u.Cost.CacheRead = l.Float()
				case "cacheWrite":
					u.Cost.CacheWrite = l.Float()
				case "total":
					u.Cost.Total = l.Float()
				default:
					return errSlow // encoding/json matches keys case-insensitively
				}
				return nil
			})
		default:
			if jsonr.FoldsTo(k, "input", "output", "cacheRead", "cacheWrite", "reasoningTokens", "cost") {
				return errSlow
			}
			l.Skip()
		}
		return nil
	})
}

// content reads a string or an array of blocks, as decodeContent does.
func (f *fast) content() []llm.Content {
	l := f.r
	switch l.Peek() {
	case 'n':
		l.Null()
		return nil
	case '"':
		return []llm.Content{llm.Text(l.String())}
	case '[':
		start := len(f.blocks)
		l.Array(func() error {
			c, keep, err := block(l)
			if keep {
				f.blocks = append(f.blocks, c)
			}
			return err
		})
		// An exact copy; [] stays an empty, non-nil content.
		out := append(make([]llm.Content, 0, len(f.blocks)-start), f.blocks[start:]...)
		clear(f.blocks[start:])
		f.blocks = f.blocks[:start]
		return out
	}
	l.Fail(errSlow)
	return nil
}

// block reads one content block; keep is false for a block of an unknown
// (non-empty) type, which is skipped.
func block(l *jsonr.Reader) (c llm.Content, keep bool, err error) {
	if l.Peek() != '{' {
		return c, false, errSlow
	}
	var typ string
	var args, raw []byte
	var x llm.ContentExtra // the rare fields, boxed only when set
	err = l.Object(func(k []byte) error {
		switch string(k) {
		case "type":
			typ = l.String()
		case "text":
			c.Text = l.String()
		case "textSignature":
			x.TextSignature = l.String()
		case "thinking":
			c.Thinking = l.String()
		case "thinkingSignature":
			c.ThinkingSignature = l.String()
		case "itemId":
			x.ItemID = l.String()
		case "data":
			c.Data = l.String()
		case "mimeType":
			c.MimeType = l.String()
		case "url":
			x.URL = l.String()
		case "detail":
			x.Detail = l.String()
		case "id":
			c.ID = l.String()
		case "name":
			c.Name = l.String()
		case "thoughtSignature":
			x.ThoughtSignature = l.String()
		case "customWireName":
			x.CustomWireName = l.String()
		case "api":
			x.NativeAPI = l.String()
		case "arguments":
			args = l.Raw()
		case "raw":
			raw = l.Raw()
		default:
			if jsonr.FoldsTo(k, blockKeys...) {
				return errSlow
			}
			l.Skip()
		}
		return nil
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
		c.Arguments, c.ArgumentsText = toolargs.Normalize(args)
	default:
		if typ == "" {
			return c, false, errSlow
		}
		return llm.Content{}, false, nil
	}
	if len(raw) > 0 {
		x.Raw = raw // a view of the decoder's private copy of the body
	}
	if !x.IsZero() {
		e := x
		c.Extra = &e
	}
	return c, true, nil
}

var (
	messageKeys = []string{"role", "content", "toolCallId", "toolName", "isError", "timestamp", "api", "provider",
		"model", "responseId", "stopReason", "errorMessage", "errorStatus", "usage"}
	blockKeys = []string{"type", "text", "textSignature", "thinking", "thinkingSignature", "itemId", "data",
		"mimeType", "url", "detail", "id", "name", "thoughtSignature", "customWireName", "api", "arguments", "raw"}
)
