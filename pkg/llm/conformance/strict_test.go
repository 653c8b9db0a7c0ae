package conformance

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// frame is one SSE event of an encoded stream.
type frame struct {
	event string // the event: line ("" when absent)
	data  string
	obj   map[string]any // data decoded, nil for [DONE]
}

// parseFrames splits an encoded stream and checks the framing rules every
// format shares: \n line endings, every event
// ended by a blank line, one JSON object per data line.
func parseFrames(t *testing.T, body []byte) []frame {
	t.Helper()
	s := string(body)
	if strings.Contains(s, "\r") {
		t.Errorf("stream contains \\r")
	}
	if !strings.HasSuffix(s, "\n\n") {
		t.Errorf("stream does not end with a blank line: %q", tail(s))
	}
	var out []frame
	for _, block := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		var f frame
		nData := 0
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				nData++
				f.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Errorf("unexpected SSE line %q", line)
			}
		}
		if nData == 0 {
			continue // a comment-only keepalive
		}
		if nData > 1 {
			t.Errorf("event with %d data lines: %q", nData, block)
		}
		if f.data != "[DONE]" {
			if err := json.Unmarshal([]byte(f.data), &f.obj); err != nil {
				t.Errorf("data is not a JSON object: %v: %q", err, f.data)
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		t.Fatalf("stream has no events")
	}
	return out
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

// checkStream asserts on an encoded stream the rules the official SDKs'
// strict decoders depend on; success says whether the turn ended normally.
func checkStream(t *testing.T, in string, body []byte, success bool) {
	t.Helper()
	if len(body) > 0 && body[0] == '{' {
		t.Fatalf("a stream request got a JSON body")
	}
	frames := parseFrames(t, body)
	switch in {
	case "messages":
		checkAnthropicStream(t, frames, success)
	case "chat":
		checkChatStream(t, frames, success)
	case "responses":
		checkResponsesStream(t, frames, success)
	case "pi":
		checkPiStream(t, frames)
	}
}

var anthropicStops = []string{"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded"}

func num(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}

func checkAnthropicStream(t *testing.T, frames []frame, success bool) {
	t.Helper()
	next, open := 0, -1
	sigs := map[int]int{}
	lastDelta := map[int]string{}
	for i, f := range frames {
		typ, _ := f.obj["type"].(string)
		if f.event == "" {
			t.Errorf("frame %d has no event: line: %s", i, f.data)
		}
		if f.event != typ {
			t.Errorf("frame %d: event %q differs from data.type %q", i, f.event, typ)
		}
		if i == 0 {
			if typ != "message_start" {
				t.Fatalf("first event is %q, not message_start", typ)
			}
			m, _ := f.obj["message"].(map[string]any)
			if c, ok := m["content"].([]any); !ok || len(c) != 0 {
				t.Errorf("message_start content is not []")
			}
			u, _ := m["usage"].(map[string]any)
			for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"} {
				if _, ok := u[k]; !ok {
					t.Errorf("message_start usage lacks %s", k)
				}
			}
			continue
		}
		idx, hasIdx := num(f.obj["index"])
		switch typ {
		case "content_block_start":
			if !hasIdx || idx != next {
				t.Errorf("content_block_start index %v, want %d", f.obj["index"], next)
			}
			if open >= 0 {
				t.Errorf("block %d started while %d open", idx, open)
			}
			open, next = idx, next+1
			cb, _ := f.obj["content_block"].(map[string]any)
			switch cb["type"] {
			case "tool_use":
				if in, ok := cb["input"].(map[string]any); !ok || len(in) != 0 {
					t.Errorf("tool_use start input is %v, want {}", cb["input"])
				}
			case "thinking":
				if cb["thinking"] != "" || cb["signature"] != "" {
					t.Errorf("thinking start is not empty: %v", cb)
				}
			case "text":
				if cb["text"] != "" {
					t.Errorf("text start is not empty: %v", cb)
				}
			}
		case "content_block_delta":
			if !hasIdx || idx != open {
				t.Errorf("delta for index %v while %d open", f.obj["index"], open)
			}
			d, _ := f.obj["delta"].(map[string]any)
			dt, _ := d["type"].(string)
			if lastDelta[idx] == "signature_delta" {
				t.Errorf("block %d: %s after signature_delta", idx, dt)
			}
			lastDelta[idx] = dt
			if dt == "signature_delta" {
				sigs[idx]++
				if sigs[idx] > 1 {
					t.Errorf("block %d has %d signature_delta", idx, sigs[idx])
				}
			}
		case "content_block_stop":
			if !hasIdx || idx != open {
				t.Errorf("stop for index %v while %d open", f.obj["index"], open)
			}
			open = -1
		case "message_delta":
			u, _ := f.obj["usage"].(map[string]any)
			if _, ok := u["output_tokens"]; !ok {
				t.Errorf("message_delta without usage.output_tokens")
			}
			d, _ := f.obj["delta"].(map[string]any)
			sr, _ := d["stop_reason"].(string)
			if !slices.Contains(anthropicStops, sr) {
				t.Errorf("stop_reason %q is not an Anthropic value", sr)
			}
			if open >= 0 {
				t.Errorf("message_delta with block %d open", open)
			}
		case "message_stop", "ping", "error":
		default:
			t.Errorf("unknown Anthropic event %q", typ)
		}
	}
	last := frames[len(frames)-1].event
	if success {
		if last != "message_stop" || len(frames) < 2 || frames[len(frames)-2].event != "message_delta" {
			t.Errorf("successful stream does not end with message_delta + message_stop")
		}
	} else if last != "error" {
		t.Errorf("failed stream ends with %q, not event: error", last)
	}
}

var chatFinishes = []string{"stop", "length", "tool_calls", "content_filter", "function_call"}

func checkChatStream(t *testing.T, frames []frame, success bool) {
	t.Helper()
	var id, model any
	var created any
	finishes, seenRole := 0, false
	named := map[int][2]string{}
	usageChunks := 0
	for i, f := range frames {
		if f.event != "" {
			t.Errorf("chat frame %d has an event: line", i)
		}
		if f.obj == nil {
			if i != len(frames)-1 {
				t.Errorf("[DONE] is not the last frame")
			}
			continue
		}
		if e, ok := f.obj["error"]; ok {
			if e == nil || i != len(frames)-1 {
				t.Errorf("frame %d has a top-level error key that is not the final error chunk: %s", i, f.data)
			}
			continue
		}
		if f.obj["object"] != "chat.completion.chunk" {
			t.Errorf("frame %d: object %v", i, f.obj["object"])
		}
		if i == 0 {
			id, created, model = f.obj["id"], f.obj["created"], f.obj["model"]
		} else if f.obj["id"] != id || f.obj["created"] != created || f.obj["model"] != model {
			t.Errorf("frame %d changes id/created/model", i)
		}
		choices, ok := f.obj["choices"].([]any)
		if !ok {
			t.Errorf("frame %d: choices is not an array", i)
			continue
		}
		if len(choices) == 0 {
			if u, _ := f.obj["usage"].(map[string]any); u == nil {
				t.Errorf("frame %d: empty choices without usage", i)
			}
			usageChunks++
			continue
		}
		if u, ok := f.obj["usage"]; ok && u != nil {
			t.Errorf("usage on a choice chunk")
		}
		if finishes > 0 {
			t.Errorf("a choice chunk follows the finish chunk")
		}
		ch, _ := choices[0].(map[string]any)
		d, _ := ch["delta"].(map[string]any)
		if i == 0 {
			seenRole = d["role"] == "assistant"
		}
		if fr, ok := ch["finish_reason"].(string); ok {
			finishes++
			if !slices.Contains(chatFinishes, fr) {
				t.Errorf("finish_reason %q is not an OpenAI value", fr)
			}
		}
		tcs, _ := d["tool_calls"].([]any)
		for _, x := range tcs {
			tc, _ := x.(map[string]any)
			k, ok := num(tc["index"])
			if !ok {
				t.Errorf("tool_calls element without index: %v", tc)
				continue
			}
			fn, _ := tc["function"].(map[string]any)
			name, hasName := fn["name"].(string)
			tid, hasID := tc["id"].(string)
			if first, seen := named[k]; !seen {
				named[k] = [2]string{tid, name}
				if !hasID || tc["type"] != "function" || !hasName || fn["arguments"] != "" {
					t.Errorf("first fragment of call %d lacks id/type/name/arguments:\"\": %v", k, tc)
				}
			} else if tc["type"] != nil || (hasID && first[0] != "") || (hasName && first[1] != "") {
				// Only a late id or name may follow, and only when the
				// first fragment sent "" for it.
				t.Errorf("later fragment of call %d repeats its identity: %v", k, tc)
			}
		}
	}
	if !seenRole {
		t.Errorf("first delta has no role:assistant")
	}
	last := frames[len(frames)-1]
	if success {
		if finishes != 1 {
			t.Errorf("%d finish reasons, want 1", finishes)
		}
		if last.data != "[DONE]" {
			t.Errorf("successful stream does not end with [DONE]")
		}
		if usageChunks > 1 {
			t.Errorf("%d usage chunks", usageChunks)
		}
	} else if _, ok := last.obj["error"]; !ok {
		t.Errorf("failed stream does not end with an error chunk: %s", last.data)
	}
}

var responsesEvents = []string{
	"response.created", "response.in_progress", "response.queued", "response.output_item.added", "response.output_item.done",
	"response.content_part.added", "response.content_part.done", "response.output_text.delta", "response.output_text.done",
	"response.refusal.delta", "response.refusal.done", "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
	"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done", "response.reasoning_text.delta", "response.reasoning_text.done",
	"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.custom_tool_call_input.delta",
	"response.custom_tool_call_input.done", "response.completed", "response.incomplete", "response.failed", "error",
}

func checkResponsesStream(t *testing.T, frames []frame, success bool) {
	t.Helper()
	var done []any
	terminals := 0
	nextOut := 0
	parts := map[[2]int]bool{}
	for i, f := range frames {
		typ, _ := f.obj["type"].(string)
		if f.obj == nil {
			t.Errorf("responses stream has a [DONE] frame")
			continue
		}
		if f.event != typ {
			t.Errorf("frame %d: event %q differs from type %q", i, f.event, typ)
		}
		if !slices.Contains(responsesEvents, typ) {
			t.Errorf("event type %q is outside the SDK union", typ)
		}
		if seq, ok := num(f.obj["sequence_number"]); !ok || seq != i {
			t.Errorf("frame %d: sequence_number %v", i, f.obj["sequence_number"])
		}
		if terminals > 0 {
			t.Errorf("event %q after the terminal event", typ)
		}
		oi, _ := num(f.obj["output_index"])
		ci, _ := num(f.obj["content_index"])
		switch typ {
		case "response.created", "response.in_progress":
			if i > 1 || (i == 0) != (typ == "response.created") {
				t.Errorf("%s at position %d", typ, i)
			}
			r, _ := f.obj["response"].(map[string]any)
			if o, ok := r["output"].([]any); !ok || len(o) != 0 || r["status"] != "in_progress" {
				t.Errorf("%s snapshot lacks output:[] / in_progress", typ)
			}
		case "response.output_item.added":
			if oi != nextOut {
				t.Errorf("output_item.added output_index %d, want %d", oi, nextOut)
			}
			nextOut++
		case "response.output_item.done":
			done = append(done, f.obj["item"])
		case "response.content_part.added":
			parts[[2]int{oi, ci}] = true
		case "response.output_text.delta":
			if !parts[[2]int{oi, ci}] {
				t.Errorf("output_text.delta before content_part.added")
			}
		case "error":
			if _, wrapped := f.obj["error"]; wrapped || f.obj["code"] == nil || f.obj["message"] == nil {
				t.Errorf("error event is not the flat shape: %s", f.data)
			}
		case "response.completed", "response.incomplete", "response.failed":
			terminals++
			r, _ := f.obj["response"].(map[string]any)
			out, _ := r["output"].([]any)
			if done == nil {
				done = []any{}
			}
			if !reflect.DeepEqual(out, done) {
				t.Errorf("terminal output differs from the output_item.done items:\n%v\n%v", out, done)
			}
			if typ != "response.failed" && r["usage"] == nil {
				t.Errorf("terminal response without usage")
			}
			if success && typ == "response.failed" {
				t.Errorf("successful turn ended with response.failed")
			}
			if !success && typ != "response.failed" {
				t.Errorf("failed turn ended with %s", typ)
			}
		}
	}
	if terminals != 1 {
		t.Errorf("%d terminal events, want 1", terminals)
	}
}

// checkPiStream checks the pi-native stream: data-only frames, the canonical
// grammar, and [DONE] after the terminal event.
func checkPiStream(t *testing.T, frames []frame) {
	t.Helper()
	if frames[len(frames)-1].data != "[DONE]" {
		t.Errorf("pi stream does not end with [DONE]")
	}
	var evs []llm.Event
	for i, f := range frames {
		if f.event != "" {
			t.Errorf("pi frame %d has an event: line", i)
		}
		if f.obj == nil {
			continue
		}
		typ, _ := f.obj["type"].(string)
		ev := llm.Event{Type: llm.ParseEventType(typ)}
		if ev.Type == 0 {
			t.Errorf("unknown pi event %q", typ)
			continue
		}
		ev.ContentIndex, _ = num(f.obj["contentIndex"])
		r, _ := f.obj["reason"].(string)
		ev.Reason = llm.StopReason(r)
		if m, ok := f.obj["message"].(map[string]any); ok {
			sr, _ := m["stopReason"].(string)
			ev.Partial = &llm.Message{StopReason: llm.StopReason(sr)}
		}
		evs = append(evs, ev)
	}
	if err := llmtest.CheckGrammar(evs); err != nil {
		t.Errorf("pi stream grammar: %v", err)
	}
}

// checkJSONBody checks a non-streaming body: valid JSON of the format's
// shape with the arrays the SDKs iterate present.
func checkJSONBody(t *testing.T, in string, body []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("non-stream body is not a JSON object: %v", err)
	}
	switch in {
	case "messages":
		if _, ok := m["content"].([]any); !ok || m["type"] != "message" {
			t.Errorf("Messages body lacks type/content: %s", body)
		}
	case "chat":
		if c, ok := m["choices"].([]any); !ok || len(c) != 1 {
			t.Errorf("Chat body lacks one choice: %s", body)
		}
	case "responses":
		if _, ok := m["output"].([]any); !ok || m["object"] != "response" {
			t.Errorf("Responses body lacks object/output: %s", body)
		}
	case "pi":
		if _, ok := m["message"].(map[string]any); !ok {
			t.Errorf("pi body lacks message: %s", body)
		}
	}
}
