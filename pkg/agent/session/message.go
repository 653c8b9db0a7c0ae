package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/pinative"
)

// Agent message roles beyond the LLM ones.
const (
	RoleCustom            = "custom"
	RoleBranchSummary     = "branchSummary"
	RoleCompactionSummary = "compactionSummary"
	RoleBashExecution     = "bashExecution"
	RoleHookMessage       = "hookMessage"
)

// Message is one agent message: its role, its JSON as stored, and
// the LLM message it becomes (the reference's convertToLlm). LLM is nil for roles
// that never reach the model (unknown roles, excluded bash executions).
type Message struct {
	Role string
	// Raw is the message object's JSON (for events and persistence).
	Raw json.RawMessage
	// LLM is the provider-facing form; it shares no memory with Raw.
	LLM *llm.Message
}

// wireMessage is the union of the fields of every known role.
type wireMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Timestamp    float64         `json:"timestamp"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	API          string          `json:"api"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	ResponseID   string          `json:"responseId"`
	Usage        *wireUsage      `json:"usage"`
	StopReason   llm.StopReason  `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ErrorStatus  int             `json:"errorStatus"`
	// custom / summaries / bash
	Summary            string `json:"summary"`
	Command            string `json:"command"`
	Output             string `json:"output"`
	ExitCode           *int   `json:"exitCode"`
	Cancelled          bool   `json:"cancelled"`
	Truncated          bool   `json:"truncated"`
	FullOutputPath     string `json:"fullOutputPath"`
	ExcludeFromContext bool   `json:"excludeFromContext"`
}

type wireUsage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Cost       struct {
		Input      float64 `json:"input"`
		Output     float64 `json:"output"`
		CacheRead  float64 `json:"cacheRead"`
		CacheWrite float64 `json:"cacheWrite"`
		Total      float64 `json:"total"`
	} `json:"cost"`
}

// Texts of the synthesised summary messages (pi lineage).
const (
	compactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	compactionSuffix = "\n</summary>"
	branchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	branchSuffix     = "</summary>"
)

// DecodeMessage decodes a stored agent message. A message that is not a
// JSON object with a role is an error; an unknown role is not (its LLM is
// nil; it is kept raw and left out of the context).
func DecodeMessage(raw json.RawMessage) (Message, error) {
	if m, ok := decodeLLMFast(raw); ok {
		return m, nil
	}
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	if w.Role == "" {
		return Message{}, fmt.Errorf("decode message: no role")
	}
	m := Message{Role: w.Role, Raw: raw}
	ts := int64(w.Timestamp)
	switch w.Role {
	case string(llm.RoleUser), string(llm.RoleDeveloper):
		m.LLM = &llm.Message{Role: llm.Role(w.Role), Content: decodeContent(w.Content), Timestamp: ts}
	case string(llm.RoleAssistant):
		lm := &llm.Message{Role: llm.RoleAssistant, Content: decodeContent(w.Content), Timestamp: ts,
			API: w.API, Provider: w.Provider, Model: w.Model, ResponseID: w.ResponseID,
			StopReason: w.StopReason, ErrorMessage: w.ErrorMessage, ErrorStatus: w.ErrorStatus}
		if u := w.Usage; u != nil {
			lm.Usage = llm.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				Cost: llm.Cost{Input: u.Cost.Input, Output: u.Cost.Output, CacheRead: u.Cost.CacheRead,
					CacheWrite: u.Cost.CacheWrite, Total: u.Cost.Total}}
		}
		m.LLM = lm
	case string(llm.RoleToolResult):
		m.LLM = &llm.Message{Role: llm.RoleToolResult, Content: decodeContent(w.Content), Timestamp: ts,
			ToolCallID: w.ToolCallID, ToolName: w.ToolName, IsError: w.IsError}
	case RoleCustom, RoleHookMessage:
		m.LLM = &llm.Message{Role: llm.RoleUser, Content: decodeContent(w.Content), Timestamp: ts}
	case RoleCompactionSummary:
		m.LLM = userText(compactionPrefix+w.Summary+compactionSuffix, ts)
	case RoleBranchSummary:
		m.LLM = userText(branchPrefix+w.Summary+branchSuffix, ts)
	case RoleBashExecution:
		if !w.ExcludeFromContext {
			m.LLM = userText(bashText(&w), ts)
		}
	}
	return m, nil
}

func userText(s string, ts int64) *llm.Message {
	return &llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(s)}, Timestamp: ts}
}

// bashText renders a user bash execution for the model.
func bashText(w *wireMessage) string {
	var b strings.Builder
	b.WriteString("Ran `" + w.Command + "`\n\n")
	if w.Output == "" {
		b.WriteString("(no output)")
	} else {
		b.WriteString("```\n" + w.Output + "\n```")
	}
	switch {
	case w.Cancelled:
		b.WriteString("\n\n(command cancelled)")
	case w.ExitCode != nil && *w.ExitCode != 0:
		b.WriteString("\n\nCommand exited with code " + strconv.Itoa(*w.ExitCode))
	}
	if w.Truncated && w.FullOutputPath != "" {
		b.WriteString("\n\n[Output truncated. Full output: " + w.FullOutputPath + "]")
	}
	return b.String()
}

// decodeContent reads a content field: a string or an array of blocks.
// Blocks of unknown types are kept as native blocks no adapter sends.
func decodeContent(raw json.RawMessage) []llm.Content {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []llm.Content{llm.Text(s)}
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	out := make([]llm.Content, 0, len(blocks))
	for _, b := range blocks {
		var c llm.Content
		if err := c.UnmarshalJSON(b); err != nil {
			c = llm.Native("omp-session-unknown", b)
		}
		out = append(out, c)
	}
	return out
}

// EncodeMessage renders an LLM message in the session's JSON shape. details
// (may be nil) is added to tool results.
func EncodeMessage(m *llm.Message, details json.RawMessage) json.RawMessage {
	b := pinative.AppendMessage(make([]byte, 0, 256), m)
	if len(details) > 0 && m.Role == llm.RoleToolResult {
		b = append(b[:len(b)-1], `,"details":`...)
		b = append(b, details...)
		b = append(b, '}')
	}
	return b
}

// NewMessage wraps an LLM message produced in this process.
func NewMessage(m *llm.Message, details json.RawMessage) Message {
	cp := *m
	return Message{Role: string(m.Role), Raw: EncodeMessage(m, details), LLM: &cp}
}

// decodeLLMFast decodes a user, developer, assistant or toolResult message
// with the pi-native request decoder (its message shape is the session's),
// which is several times faster than encoding/json on long sessions. ok is
// false for other roles and anything the decoder rejects; the caller then
// takes the encoding/json path.
func decodeLLMFast(raw json.RawMessage) (Message, bool) {
	role := messageRole(raw)
	if !isLLMRole(role) {
		return Message{}, false
	}
	body := make([]byte, 0, len(raw)+48)
	body = append(body, `{"modelId":"s","context":{"messages":[`...)
	body = append(body, raw...)
	body = append(body, "]}}"...)
	req, err := pinative.DecodeRequest(body)
	if err != nil || len(req.Canonical.Messages) != 1 {
		return Message{}, false
	}
	lm := req.Canonical.Messages[0]
	return Message{Role: role, Raw: raw, LLM: &lm}, true
}

// messageRole returns the role of a raw message ("" when it has none or
// is not an object).
func messageRole(raw []byte) string {
	var role string
	if !scanObject(raw, func(key []byte, val []byte) {
		if string(key) == "role" {
			role, _ = rawString(val)
		}
	}) {
		return ""
	}
	return role
}

func isLLMRole(role string) bool {
	switch llm.Role(role) {
	case llm.RoleUser, llm.RoleDeveloper, llm.RoleAssistant, llm.RoleToolResult:
		return true
	}
	return false
}
