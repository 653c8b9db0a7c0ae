package agent

import (
	"encoding/json"
	"strconv"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/pinative"
)

// Event types, as the reference names them.
const (
	EventAgentStart          = "agent_start"
	EventAgentEnd            = "agent_end"
	EventTurnStart           = "turn_start"
	EventTurnEnd             = "turn_end"
	EventMessageStart        = "message_start"
	EventMessageUpdate       = "message_update"
	EventMessageEnd          = "message_end"
	EventToolExecutionStart  = "tool_execution_start"
	EventToolExecutionUpdate = "tool_execution_update"
	EventToolExecutionEnd    = "tool_execution_end"
	EventAutoRetryStart      = "auto_retry_start"
	EventAutoRetryEnd        = "auto_retry_end"
	EventAutoCompactionStart = "auto_compaction_start"
	EventAutoCompactionEnd   = "auto_compaction_end"
)

// Event is one agent event. Only the fields of its Type are set.
// Message, Messages and ToolResults hold agent-message JSON. Assistant
// is the canonical stream event of a message_update (its Partial is the
// message so far); it points into state the loop keeps mutating, so a
// listener must encode or copy it before returning.
type Event struct {
	Type string

	Message     json.RawMessage
	Messages    []json.RawMessage
	ToolResults []json.RawMessage
	Assistant   *llm.Event

	ToolCallID string
	ToolName   string
	Args       json.RawMessage
	// Result is the tool result object {content, details?} (update and
	// end), or the CompactionResult of auto_compaction_end (nil: none).
	Result  json.RawMessage
	IsError bool

	Attempt      int
	MaxAttempts  int
	DelayMs      int64
	ErrorMessage string
	Success      bool
	FinalError   string

	// IsTerminal and Yielded belong to agent_end: IsTerminal is false when
	// the session starts another run by itself (a retry, a recovery, an
	// auto-continue, or a queued message delivered); Yielded is false only
	// while the agent continues its own work, so a run followed by queued
	// input is not terminal but has yielded.
	IsTerminal bool
	Yielded    bool

	// Reason is auto_compaction_start's "threshold", "overflow", "idle" or
	// "incomplete"; Aborted and WillRetry belong to auto_compaction_end.
	Reason    string
	Aborted   bool
	WillRetry bool
}

// AppendJSON appends the event as one JSON object. reduced selects the
// reduced json-mode shapes of 18.1.21: message_update carries only the stream event
// without partial, and its done/error events only {type, reason}.
func (e *Event) AppendJSON(dst []byte, reduced bool) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.String(dst, e.Type)
	raw := func(key string, v json.RawMessage) {
		if v == nil {
			v = json.RawMessage("null")
		}
		dst = append(dst, `,"`+key+`":`...)
		dst = append(dst, v...)
	}
	list := func(key string, vs []json.RawMessage) {
		dst = append(dst, `,"`+key+`":[`...)
		for i, v := range vs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, v...)
		}
		dst = append(dst, ']')
	}
	switch e.Type {
	case EventAgentEnd:
		list("messages", e.Messages)
		dst = append(dst, `,"isTerminal":`...)
		dst = strconv.AppendBool(dst, e.IsTerminal)
		dst = append(dst, `,"yielded":`...)
		dst = strconv.AppendBool(dst, e.Yielded)
	case EventTurnEnd:
		raw("message", e.Message)
		list("toolResults", e.ToolResults)
	case EventMessageStart, EventMessageEnd:
		raw("message", e.Message)
	case EventMessageUpdate:
		if !reduced {
			dst = append(dst, `,"message":`...)
			if e.Assistant != nil && e.Assistant.Partial != nil {
				dst = pinative.AppendMessage(dst, e.Assistant.Partial)
			} else {
				dst = append(dst, "null"...)
			}
		}
		dst = append(dst, `,"assistantMessageEvent":`...)
		dst = appendAssistantEvent(dst, e.Assistant, reduced)
	case EventToolExecutionStart, EventToolExecutionUpdate, EventToolExecutionEnd:
		dst = append(dst, `,"toolCallId":`...)
		dst = jsonw.String(dst, e.ToolCallID)
		dst = append(dst, `,"toolName":`...)
		dst = jsonw.String(dst, e.ToolName)
		if e.Type != EventToolExecutionEnd {
			raw("args", e.Args)
		}
		switch e.Type {
		case EventToolExecutionUpdate:
			raw("partialResult", e.Result)
		case EventToolExecutionEnd:
			raw("result", e.Result)
			dst = append(dst, `,"isError":`...)
			dst = strconv.AppendBool(dst, e.IsError)
		}
	case EventAutoRetryStart:
		dst = append(dst, `,"attempt":`...)
		dst = strconv.AppendInt(dst, int64(e.Attempt), 10)
		dst = append(dst, `,"maxAttempts":`...)
		dst = strconv.AppendInt(dst, int64(e.MaxAttempts), 10)
		dst = append(dst, `,"delayMs":`...)
		dst = strconv.AppendInt(dst, e.DelayMs, 10)
		dst = append(dst, `,"errorMessage":`...)
		dst = jsonw.String(dst, e.ErrorMessage)
	case EventAutoCompactionStart:
		dst = append(dst, `,"reason":`...)
		dst = jsonw.String(dst, e.Reason)
	case EventAutoCompactionEnd:
		if e.Result != nil {
			raw("result", e.Result)
		}
		dst = append(dst, `,"aborted":`...)
		dst = strconv.AppendBool(dst, e.Aborted)
		dst = append(dst, `,"willRetry":`...)
		dst = strconv.AppendBool(dst, e.WillRetry)
		if e.ErrorMessage != "" {
			dst = append(dst, `,"errorMessage":`...)
			dst = jsonw.String(dst, e.ErrorMessage)
		}
	case EventAutoRetryEnd:
		dst = append(dst, `,"success":`...)
		dst = strconv.AppendBool(dst, e.Success)
		dst = append(dst, `,"attempt":`...)
		dst = strconv.AppendInt(dst, int64(e.Attempt), 10)
		if e.FinalError != "" {
			dst = append(dst, `,"finalError":`...)
			dst = jsonw.String(dst, e.FinalError)
		}
	}
	return append(dst, '}')
}

func appendAssistantEvent(dst []byte, ev *llm.Event, reduced bool) []byte {
	if ev == nil {
		return append(dst, "null"...)
	}
	if !reduced {
		return pinative.AppendEvent(dst, ev)
	}
	dst = append(dst, `{"type":`...)
	dst = jsonw.String(dst, ev.Type.String())
	switch ev.Type {
	case llm.EventStart:
	case llm.EventDone, llm.EventError:
		reason := ev.Reason
		if reason == "" {
			reason = llm.StopError
		}
		dst = append(dst, `,"reason":`...)
		dst = jsonw.String(dst, string(reason))
	default:
		dst = append(dst, `,"contentIndex":`...)
		dst = strconv.AppendInt(dst, int64(ev.ContentIndex), 10)
		switch ev.Type {
		case llm.EventTextDelta, llm.EventThinkingDelta, llm.EventToolCallDelta:
			dst = append(dst, `,"delta":`...)
			dst = jsonw.String(dst, ev.Delta)
		case llm.EventTextEnd, llm.EventThinkingEnd:
			dst = append(dst, `,"content":`...)
			dst = jsonw.String(dst, ev.Content)
		case llm.EventToolCallEnd:
			if b := ev.Block(); b != nil {
				dst = append(dst, `,"toolCall":`...)
				dst = pinative.AppendContent(dst, b)
			}
		}
	}
	return append(dst, '}')
}
