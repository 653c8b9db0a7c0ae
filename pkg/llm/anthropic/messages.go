package anthropic

import (
	"slices"
	"strings"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

// msgWriter writes the messages array, merging consecutive canonical
// messages that map to the same Anthropic role (tool results and the user
// text after them become one user message) and dropping messages
// that end up empty.
type msgWriter struct {
	dst    []byte
	role   string // role of the open message, "" when none
	mark   int    // len(dst) before the open message
	blocks int    // blocks written into the open message
	oauth  bool
	count  int // messages written
}

func (w *msgWriter) open(role string) {
	if w.role == role {
		return
	}
	w.close()
	w.mark = len(w.dst)
	if w.count > 0 {
		w.dst = append(w.dst, ',')
	}
	w.dst = append(w.dst, `{"role":"`...)
	w.dst = append(w.dst, role...)
	w.dst = append(w.dst, `","content":[`...)
	w.role, w.blocks = role, 0
}

func (w *msgWriter) close() {
	if w.role == "" {
		return
	}
	if w.blocks == 0 {
		w.dst = w.dst[:w.mark]
	} else {
		w.dst = append(w.dst, "]}"...)
		w.count++
	}
	w.role = ""
}

// block starts a block: a comma when needed.
func (w *msgWriter) block() {
	if w.blocks > 0 {
		w.dst = append(w.dst, ',')
	}
	w.blocks++
}

func appendMessages(dst []byte, msgs []llm.Message, oauth bool) []byte {
	w := msgWriter{dst: append(dst, '['), oauth: oauth}
	var run []int // a run of consecutive tool results, in call order
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == llm.RoleToolResult {
			run = toolResultRun(msgs, i, run[:0])
			w.open("user")
			for _, k := range run {
				w.toolResult(&msgs[k])
			}
			i += len(run) - 1
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			w.open("user")
			for j := range m.Content {
				w.userBlock(&m.Content[j])
			}
		case llm.RoleAssistant:
			w.open("assistant")
			replay := replaysThinking(m)
			for j := range m.Content {
				w.assistantBlock(&m.Content[j], replay)
			}
		}
		// RoleDeveloper was hoisted into system.
	}
	w.close()
	return append(w.dst, ']')
}

// toolResultRun returns the indices of the consecutive tool results
// starting at i, ordered like the calls of the preceding assistant message;
// results without a matching call keep their place at the end.
func toolResultRun(msgs []llm.Message, i int, run []int) []int {
	end := i
	for end < len(msgs) && msgs[end].Role == llm.RoleToolResult {
		run = append(run, end)
		end++
	}
	if len(run) < 2 || i == 0 || msgs[i-1].Role != llm.RoleAssistant {
		return run
	}
	calls := msgs[i-1].Content
	pos := func(k int) int {
		for j := range calls {
			if calls[j].Type == llm.ContentToolCall && calls[j].ID == msgs[k].ToolCallID {
				return j
			}
		}
		return len(calls)
	}
	slices.SortStableFunc(run, func(a, b int) int { return pos(a) - pos(b) })
	return run
}

func (w *msgWriter) cache(c *llm.CacheControl) {
	if c != nil {
		w.dst = append(w.dst, `,"cache_control":`...)
		w.dst = appendCache(w.dst, c)
	}
}

func (w *msgWriter) text(c *llm.Content) {
	if strings.TrimSpace(c.Text) == "" {
		return // Anthropic rejects empty text blocks
	}
	w.block()
	w.dst = append(w.dst, `{"type":"text","text":`...)
	w.dst = jsonw.String(w.dst, c.Text)
	w.cache(c.Cache())
	w.dst = append(w.dst, '}')
}

func (w *msgWriter) image(c *llm.Content) {
	mime, data, url := c.MimeType, c.Data, c.URL()
	if data == "" && strings.HasPrefix(url, "data:") {
		if semi := strings.Index(url, ";base64,"); semi > 5 {
			mime, data, url = url[5:semi], url[semi+8:], ""
		}
	}
	switch {
	case data != "":
		if mime == "image/jpg" {
			mime = "image/jpeg"
		}
		w.block()
		w.dst = append(w.dst, `{"type":"image","source":{"type":"base64","media_type":`...)
		w.dst = jsonw.String(w.dst, mime)
		w.dst = append(w.dst, `,"data":`...)
		w.dst = jsonw.String(w.dst, data)
		w.dst = append(w.dst, '}')
	case url != "":
		w.block()
		w.dst = append(w.dst, `{"type":"image","source":{"type":"url","url":`...)
		w.dst = jsonw.String(w.dst, url)
		w.dst = append(w.dst, '}')
	default:
		return
	}
	w.cache(c.Cache())
	w.dst = append(w.dst, '}')
}

func (w *msgWriter) native(c *llm.Content) {
	if c.NativeAPI() != llm.APIAnthropic || len(c.Raw()) == 0 {
		return
	}
	w.block()
	w.dst = appendCompact(w.dst, c.Raw())
}

func (w *msgWriter) userBlock(c *llm.Content) {
	switch c.Type {
	case llm.ContentText:
		w.text(c)
	case llm.ContentImage:
		w.image(c)
	case llm.ContentNative:
		w.native(c)
	}
}

func (w *msgWriter) toolResult(m *llm.Message) {
	w.block()
	w.dst = append(w.dst, `{"type":"tool_result","tool_use_id":`...)
	w.dst = jsonw.String(w.dst, SanitizeToolID(m.ToolCallID))
	if m.IsError {
		w.dst = append(w.dst, `,"is_error":true`...)
	}
	w.cache(m.Cache)
	// Write the content with a nested writer state on the same buffer.
	mark := len(w.dst)
	w.dst = append(w.dst, `,"content":[`...)
	outer := w.blocks
	w.blocks = 0
	for j := range m.Content {
		w.userBlock(&m.Content[j])
	}
	if w.blocks == 0 {
		w.dst = w.dst[:mark]
	} else {
		w.dst = append(w.dst, ']')
	}
	w.blocks = outer
	w.dst = append(w.dst, '}')
}

func (w *msgWriter) assistantBlock(c *llm.Content, replay bool) {
	switch c.Type {
	case llm.ContentText:
		w.text(c)
	case llm.ContentThinking:
		sig := anthropicSignature(c.ThinkingSignature)
		if !replay || sig == "" {
			return
		}
		w.block()
		w.dst = append(w.dst, `{"type":"thinking","thinking":`...)
		w.dst = jsonw.String(w.dst, c.Thinking)
		w.dst = append(w.dst, `,"signature":`...)
		w.dst = jsonw.String(w.dst, sig)
		w.dst = append(w.dst, '}')
	case llm.ContentRedactedThinking:
		if !replay {
			return
		}
		w.block()
		w.dst = append(w.dst, `{"type":"redacted_thinking","data":`...)
		w.dst = jsonw.String(w.dst, c.Data)
		w.dst = append(w.dst, '}')
	case llm.ContentToolCall:
		w.block()
		w.dst = append(w.dst, `{"type":"tool_use","id":`...)
		w.dst = jsonw.String(w.dst, SanitizeToolID(c.ID))
		w.dst = append(w.dst, `,"name":`...)
		w.dst = jsonw.String(w.dst, wireToolName(c.Name, w.oauth))
		w.dst = append(w.dst, `,"input":`...)
		w.dst = appendCompact(w.dst, c.PartialArguments())
		w.cache(c.Cache())
		w.dst = append(w.dst, '}')
	case llm.ContentNative:
		w.native(c)
	}
}

func appendTools(dst []byte, tools []llm.Tool, oauth bool) []byte {
	dst = append(dst, `,"tools":[`...)
	n := 0
	for i := range tools {
		t := &tools[i]
		if len(t.Native) > 0 {
			if t.NativeAPI != llm.APIAnthropic {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = appendCompact(dst, t.Native)
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"name":`...)
		dst = jsonw.String(dst, wireToolName(t.Name, oauth))
		if t.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = jsonw.String(dst, t.Description)
		}
		dst = append(dst, `,"input_schema":`...)
		dst = appendSchema(dst, t.Parameters)
		if t.Strict != nil && *t.Strict {
			dst = append(dst, `,"strict":true`...)
		}
		if t.Cache != nil {
			dst = append(dst, `,"cache_control":`...)
			dst = appendCache(dst, t.Cache)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendSchema writes an input_schema, repairing a missing or non-object
// schema to {"type":"object","properties":{}}.
func appendSchema(dst []byte, schema []byte) []byte {
	s := strings.TrimSpace(string(schema))
	if s == "" || s == "null" || s[0] != '{' {
		return append(dst, `{"type":"object","properties":{}}`...)
	}
	hasType := false
	_ = jsonr.EachField([]byte(s), func(key string, _ []byte) { hasType = hasType || key == "type" })
	if !hasType {
		// Prepend the type; the schema is an object so "{" + … is valid.
		dst = append(dst, `{"type":"object"`...)
		if rest := strings.TrimSpace(s[1:]); rest != "}" {
			dst = append(dst, ',')
			return appendCompact(dst, []byte(rest))
		}
		return append(dst, '}')
	}
	return appendCompact(dst, schema)
}
