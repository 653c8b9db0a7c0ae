package conformance

import (
	"encoding/json"
	"strconv"
	"strings"
)

// turn is one scripted assistant turn, rendered by each upstream in its
// own documented wire shape.
type turn struct {
	thinking []string // thinking / reasoning summary deltas
	// signature is the upstream's native reasoning signature: Anthropic
	// signature, Responses encrypted_content, Gemini thoughtSignature on
	// the thought part.
	signature string
	text      []string
	calls     []call
	// callSignature is the Gemini thoughtSignature of the first call.
	callSignature string
	// finish is the raw upstream stop value ("" = the natural one). For
	// Responses it is "completed", "failed" or an incomplete reason.
	finish  string
	stopSeq string // Anthropic stop_sequence
	usage   usage
	// failAfterText replaces the end of the turn by the upstream's
	// mid-stream error.
	failAfterText bool
}

type call struct {
	id, name string
	args     []string // argument fragments; Gemini sends them joined
}

// usage is the canonical accounting the script reports, spelled in each
// upstream's vocabulary.
type usage struct{ input, cacheRead, cacheWrite, output, reasoning int }

func (c call) joined() string { return strings.Join(c.args, "") }

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// obj is an ordered JSON object builder for readable scripts.
type obj []any

func (o obj) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(js(o[i]))
		b.WriteByte(':')
		if s, ok := o[i+1].(raw); ok {
			b.WriteString(string(s))
		} else if s, ok := o[i+1].(obj); ok {
			b.WriteString(s.String())
		} else {
			b.WriteString(js(o[i+1]))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// raw is pre-encoded JSON inside an obj.
type raw string

func event(b *strings.Builder, name, data string) {
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
}

// anthropicScript renders an Anthropic Messages stream.
func anthropicScript(tn turn) string {
	var b strings.Builder
	u := tn.usage
	event(&b, "message_start", obj{"type", "message_start", "message", obj{"id", "msg_up_1", "type", "message", "role", "assistant",
		"model", "claude-sonnet-4-5", "content", raw("[]"), "stop_reason", nil, "stop_sequence", nil,
		"usage", obj{"input_tokens", u.input, "cache_creation_input_tokens", u.cacheWrite, "cache_read_input_tokens", u.cacheRead, "output_tokens", 1}}}.String())
	event(&b, "ping", `{"type": "ping"}`)
	idx := 0
	block := func(start string, deltas []string, stop bool) {
		event(&b, "content_block_start", `{"type":"content_block_start","index":`+strconv.Itoa(idx)+`,"content_block":`+start+`}`)
		for _, d := range deltas {
			event(&b, "content_block_delta", `{"type":"content_block_delta","index":`+strconv.Itoa(idx)+`,"delta":`+d+`}`)
		}
		if stop {
			event(&b, "content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(idx)+`}`)
		}
		idx++
	}
	if len(tn.thinking) > 0 || tn.signature != "" {
		var ds []string
		for _, t := range tn.thinking {
			ds = append(ds, obj{"type", "thinking_delta", "thinking", t}.String())
		}
		if tn.signature != "" {
			ds = append(ds, obj{"type", "signature_delta", "signature", tn.signature}.String())
		}
		block(`{"type":"thinking","thinking":"","signature":""}`, ds, true)
	}
	if len(tn.text) > 0 {
		var ds []string
		for _, t := range tn.text {
			ds = append(ds, obj{"type", "text_delta", "text", t}.String())
		}
		block(`{"type":"text","text":""}`, ds, !tn.failAfterText)
	}
	if tn.failAfterText {
		event(&b, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return b.String()
	}
	for _, c := range tn.calls {
		ds := []string{`{"type":"input_json_delta","partial_json":""}`}
		for _, a := range c.args {
			ds = append(ds, obj{"type", "input_json_delta", "partial_json", a}.String())
		}
		block(obj{"type", "tool_use", "id", c.id, "name", c.name, "input", raw("{}")}.String(), ds, true)
	}
	stop := tn.finish
	if stop == "" {
		stop = "end_turn"
		if len(tn.calls) > 0 {
			stop = "tool_use"
		}
	}
	var seq any
	if tn.stopSeq != "" {
		seq = tn.stopSeq
	}
	event(&b, "message_delta", obj{"type", "message_delta", "delta", obj{"stop_reason", stop, "stop_sequence", seq},
		"usage", obj{"input_tokens", u.input, "cache_creation_input_tokens", u.cacheWrite, "cache_read_input_tokens", u.cacheRead, "output_tokens", u.output}}.String())
	event(&b, "message_stop", `{"type":"message_stop"}`)
	return b.String()
}

// chatScript renders a Chat Completions stream with include_usage.
func chatScript(tn turn) string {
	var b strings.Builder
	head := `{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000001,"model":"gpt-5-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":`
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = js(finish)
		}
		event(&b, "", head+delta+`,"logprobs":null,"finish_reason":`+f+`}],"usage":null}`)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	for _, t := range tn.thinking {
		chunk(obj{"reasoning_content", t}.String(), "")
	}
	for _, t := range tn.text {
		chunk(obj{"content", t}.String(), "")
	}
	if tn.failAfterText {
		event(&b, "", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		return b.String()
	}
	for i, c := range tn.calls {
		chunk(`{"tool_calls":[{"index":`+strconv.Itoa(i)+`,"id":`+js(c.id)+`,"type":"function","function":{"name":`+js(c.name)+`,"arguments":""}}]}`, "")
		for _, a := range c.args {
			chunk(`{"tool_calls":[{"index":`+strconv.Itoa(i)+`,"function":{"arguments":`+js(a)+`}}]}`, "")
		}
	}
	finish := tn.finish
	if finish == "" {
		finish = "stop"
		if len(tn.calls) > 0 {
			finish = "tool_calls"
		}
	}
	chunk(`{}`, finish)
	u := tn.usage
	prompt := u.input + u.cacheRead
	event(&b, "", `{"id":"chatcmpl-up1","object":"chat.completion.chunk","created":1700000001,"model":"gpt-5-mini","system_fingerprint":"fp_1","choices":[],"usage":`+
		obj{"prompt_tokens", prompt, "completion_tokens", u.output, "total_tokens", prompt + u.output,
			"prompt_tokens_details", obj{"cached_tokens", u.cacheRead}, "completion_tokens_details", obj{"reasoning_tokens", u.reasoning}}.String()+`}`)
	event(&b, "", "[DONE]")
	return b.String()
}

// responsesScript renders a Responses stream; codex sends the terminal
// response with an empty output, as the ChatGPT backend does.
func responsesScript(tn turn, codex bool) string {
	var b strings.Builder
	seq := 0
	ev := func(typ string, fields ...any) {
		o := append(obj{"type", typ, "sequence_number", seq}, fields...)
		seq++
		event(&b, typ, o.String())
	}
	snapshot := func(status string, output []string, extra ...any) obj {
		return append(obj{"id", "resp_up_1", "object", "response", "created_at", 1700000001, "status", status,
			"model", "gpt-5", "output", raw("[" + strings.Join(output, ",") + "]")}, extra...)
	}
	ev("response.created", "response", append(snapshot("in_progress", nil), "usage", nil))
	ev("response.in_progress", "response", append(snapshot("in_progress", nil), "usage", nil))
	var done []string
	out := 0
	if len(tn.thinking) > 0 || tn.signature != "" {
		id := "rs_up_1"
		ev("response.output_item.added", "output_index", out, "item", obj{"id", id, "type", "reasoning", "summary", raw("[]")})
		summary := "[]"
		if len(tn.thinking) > 0 {
			full := strings.Join(tn.thinking, "")
			ev("response.reasoning_summary_part.added", "item_id", id, "output_index", out, "summary_index", 0, "part", obj{"type", "summary_text", "text", ""})
			for _, t := range tn.thinking {
				ev("response.reasoning_summary_text.delta", "item_id", id, "output_index", out, "summary_index", 0, "delta", t, "obfuscation", "x1")
			}
			ev("response.reasoning_summary_text.done", "item_id", id, "output_index", out, "summary_index", 0, "text", full)
			ev("response.reasoning_summary_part.done", "item_id", id, "output_index", out, "summary_index", 0, "part", obj{"type", "summary_text", "text", full})
			summary = "[" + obj{"type", "summary_text", "text", full}.String() + "]"
		}
		item := obj{"id", id, "type", "reasoning", "summary", raw(summary)}
		if tn.signature != "" {
			item = append(item, "encrypted_content", tn.signature)
		}
		ev("response.output_item.done", "output_index", out, "item", item)
		done = append(done, item.String())
		out++
	}
	if len(tn.text) > 0 {
		id := "msg_up_1"
		full := strings.Join(tn.text, "")
		ev("response.output_item.added", "output_index", out, "item", obj{"id", id, "type", "message", "status", "in_progress", "role", "assistant", "content", raw("[]")})
		ev("response.content_part.added", "item_id", id, "output_index", out, "content_index", 0, "part", obj{"type", "output_text", "text", "", "annotations", raw("[]")})
		for _, t := range tn.text {
			ev("response.output_text.delta", "item_id", id, "output_index", out, "content_index", 0, "delta", t, "logprobs", raw("[]"))
		}
		if tn.failAfterText {
			ev("error", "code", "server_error", "message", "The model crashed mid-response.", "param", nil)
			return b.String()
		}
		ev("response.output_text.done", "item_id", id, "output_index", out, "content_index", 0, "text", full, "logprobs", raw("[]"))
		part := obj{"type", "output_text", "text", full, "annotations", raw("[]")}
		ev("response.content_part.done", "item_id", id, "output_index", out, "content_index", 0, "part", part)
		item := obj{"id", id, "type", "message", "status", "completed", "role", "assistant", "content", raw("[" + part.String() + "]")}
		ev("response.output_item.done", "output_index", out, "item", item)
		done = append(done, item.String())
		out++
	}
	for i, c := range tn.calls {
		id := "fc_up_" + strconv.Itoa(i+1)
		ev("response.output_item.added", "output_index", out, "item", obj{"id", id, "type", "function_call", "status", "in_progress", "call_id", c.id, "name", c.name, "arguments", ""})
		for _, a := range c.args {
			ev("response.function_call_arguments.delta", "item_id", id, "output_index", out, "delta", a)
		}
		ev("response.function_call_arguments.done", "item_id", id, "output_index", out, "arguments", c.joined())
		item := obj{"id", id, "type", "function_call", "status", "completed", "call_id", c.id, "name", c.name, "arguments", c.joined()}
		ev("response.output_item.done", "output_index", out, "item", item)
		done = append(done, item.String())
		out++
	}
	if codex {
		done = nil
	}
	u := tn.usage
	use := obj{"input_tokens", u.input + u.cacheRead, "input_tokens_details", obj{"cached_tokens", u.cacheRead},
		"output_tokens", u.output, "output_tokens_details", obj{"reasoning_tokens", u.reasoning}, "total_tokens", u.input + u.cacheRead + u.output}
	switch tn.finish {
	case "", "completed":
		ev("response.completed", "response", append(snapshot("completed", done), "usage", use))
	case "failed":
		ev("response.failed", "response", append(snapshot("failed", done), "error", obj{"code", "server_error", "message", "Response failed."}, "usage", use))
	default:
		ev("response.incomplete", "response", append(snapshot("incomplete", done), "incomplete_details", obj{"reason", tn.finish}, "usage", use))
	}
	return b.String()
}

// geminiScript renders a streamGenerateContent?alt=sse body (CRLF
// separated); codeAssist wraps each chunk as {"response": …}.
func geminiScript(tn turn, codeAssist bool) string {
	var b strings.Builder
	u := tn.usage
	prompt := u.input + u.cacheRead
	chunk := func(parts string, finish string, full bool) {
		cand := `{"content":{"parts":[` + parts + `],"role":"model"},"index":0`
		if finish != "" {
			cand += `,"finishReason":` + js(finish)
		}
		cand += "}"
		um := obj{"promptTokenCount", prompt, "cachedContentTokenCount", u.cacheRead, "totalTokenCount", prompt}
		if full {
			um = obj{"promptTokenCount", prompt, "cachedContentTokenCount", u.cacheRead, "candidatesTokenCount", u.output - u.reasoning,
				"thoughtsTokenCount", u.reasoning, "totalTokenCount", prompt + u.output}
		}
		data := `{"candidates":[` + cand + `],"usageMetadata":` + um.String() + `,"modelVersion":"gemini-2.5-pro","responseId":"ge-resp-1"}`
		if codeAssist {
			data = `{"response":` + data + `,"traceId":"trace-1"}`
		}
		b.WriteString("data: " + data + "\r\n\r\n")
	}
	for i, t := range tn.thinking {
		p := obj{"text", t, "thought", true}
		if i == len(tn.thinking)-1 && tn.signature != "" {
			p = append(p, "thoughtSignature", tn.signature)
		}
		chunk(p.String(), "", false)
	}
	for _, t := range tn.text {
		chunk(obj{"text", t}.String(), "", false)
	}
	if tn.failAfterText {
		b.WriteString(`data: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}` + "\r\n\r\n")
		return b.String()
	}
	if len(tn.calls) > 0 {
		var parts []string
		for i, c := range tn.calls {
			p := obj{"functionCall", obj{"name", c.name, "args", raw(c.joined())}}
			if i == 0 && tn.callSignature != "" {
				p = append(p, "thoughtSignature", tn.callSignature)
			}
			parts = append(parts, p.String())
		}
		chunk(strings.Join(parts, ","), "", false)
	}
	finish := tn.finish
	if finish == "" {
		finish = "STOP"
	}
	chunk(`{"text":""}`, finish, true)
	return b.String()
}
