package conformance

import (
	"encoding/json"
	"testing"
)

// stopCase is one upstream stop signal and what every inbound format must
// show for it (upstream → canonical → inbound). The inbound values are read from the encoded stream:
// messages "stop_reason[/stop_sequence]" or "error:<type>", chat the
// finish_reason or "error", responses the terminal event ("completed",
// "incomplete:<reason>", "failed") and pi "<terminal>:<reason>".
type stopCase struct {
	name     string
	upstream string
	finish   string
	stopSeq  string
	calls    bool
	messages string
	chat     string
	resp     string
	pi       string
	// jsonStatus is the non-streaming status for A, C and R (P answers a
	// safety stop with an error envelope: 502).
	jsonStatus int
}

var stopCases = []stopCase{
	{"an_end_turn_is_stop", "anthropic", "end_turn", "", false, "end_turn", "stop", "completed", "done:stop", 200},
	{"an_stop_sequence_keeps_the_sequence", "anthropic", "stop_sequence", "###", false, "stop_sequence/###", "stop", "completed", "done:stop", 200},
	{"an_max_tokens_is_length", "anthropic", "max_tokens", "", false, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"an_context_window_is_length_raw_for_a", "anthropic", "model_context_window_exceeded", "", false, "model_context_window_exceeded", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"an_tool_use_is_tool_use", "anthropic", "tool_use", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"an_end_turn_with_calls_is_tool_use_for_a", "anthropic", "end_turn", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"an_stop_sequence_with_calls_is_tool_use_for_a", "anthropic", "stop_sequence", "###", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"an_max_tokens_with_calls_is_length", "anthropic", "max_tokens", "", true, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"an_refusal_with_calls_is_tool_use_for_a", "anthropic", "refusal", "", true, "tool_use", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"an_pause_turn_is_stop_raw_for_a", "anthropic", "pause_turn", "", false, "pause_turn", "stop", "completed", "done:stop", 200},
	{"an_refusal_is_safety", "anthropic", "refusal", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},

	{"oc_stop_is_stop", "openai-chat", "stop", "", false, "end_turn", "stop", "completed", "done:stop", 200},
	{"oc_stop_with_calls_is_tool_use", "openai-chat", "stop", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"oc_length_is_length", "openai-chat", "length", "", false, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"oc_tool_calls_is_tool_use", "openai-chat", "tool_calls", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	// The legacy function_call finish is reported as tool_calls: the
	// deltas are tool_calls, and a function_call finish would make SDKs
	// look for the legacy function_call field.
	{"oc_function_call_is_tool_use", "openai-chat", "function_call", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"oc_content_filter_with_calls_is_tool_use_for_a", "openai-chat", "content_filter", "", true, "tool_use", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"oc_content_filter_is_safety", "openai-chat", "content_filter", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},

	{"or_completed_is_stop", "openai-responses", "completed", "", false, "end_turn", "stop", "completed", "done:stop", 200},
	{"or_completed_with_calls_is_tool_use", "openai-responses", "completed", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"or_max_output_tokens_is_length", "openai-responses", "max_output_tokens", "", false, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"or_content_filter_is_safety", "openai-responses", "content_filter", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"or_failed_is_error", "openai-responses", "failed", "", false, "error:api_error", "error", "failed", "error:error", 502},
	{"cx_completed_with_calls_is_tool_use", "openai-codex", "completed", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"cx_max_output_tokens_is_length", "openai-codex", "max_output_tokens", "", false, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"cx_content_filter_is_safety", "openai-codex", "content_filter", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},

	{"ge_stop_is_stop", "google", "STOP", "", false, "end_turn", "stop", "completed", "done:stop", 200},
	{"ge_stop_with_calls_is_tool_use", "google", "STOP", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"ge_max_tokens_is_length", "google", "MAX_TOKENS", "", false, "max_tokens", "length", "incomplete:max_output_tokens", "done:length", 200},
	{"ge_safety_is_safety", "google", "SAFETY", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_recitation_is_safety", "google", "RECITATION", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_blocklist_is_safety", "google", "BLOCKLIST", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_prohibited_content_is_safety", "google", "PROHIBITED_CONTENT", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_spii_is_safety", "google", "SPII", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_image_safety_is_safety", "google", "IMAGE_SAFETY", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
	{"ge_malformed_function_call_is_error", "google", "MALFORMED_FUNCTION_CALL", "", false, "error:api_error", "error", "failed", "error:error", 502},
	{"ge_other_is_error", "google", "OTHER", "", false, "error:api_error", "error", "failed", "error:error", 502},
	{"gc_stop_with_calls_is_tool_use", "google-gemini-cli", "STOP", "", true, "tool_use", "tool_calls", "completed", "done:toolUse", 200},
	{"gc_safety_is_safety", "google-gemini-cli", "SAFETY", "", false, "refusal", "content_filter", "incomplete:content_filter", "error:error", 200},
}

// finalStop reads the stop value an inbound client sees in a stream.
func finalStop(t *testing.T, in string, body []byte) string {
	t.Helper()
	frames := parseFrames(t, body)
	out := "<none>"
	for _, f := range frames {
		switch in {
		case "messages":
			switch f.event {
			case "message_delta":
				d, _ := f.obj["delta"].(map[string]any)
				out, _ = d["stop_reason"].(string)
				if seq, ok := d["stop_sequence"].(string); ok {
					out += "/" + seq
				}
			case "error":
				e, _ := f.obj["error"].(map[string]any)
				typ, _ := e["type"].(string)
				out = "error:" + typ
			}
		case "chat":
			if _, ok := f.obj["error"]; ok {
				out = "error"
			}
			if ch, _ := f.obj["choices"].([]any); len(ch) > 0 {
				if fr, ok := ch[0].(map[string]any)["finish_reason"].(string); ok {
					out = fr
				}
			}
		case "responses":
			r, _ := f.obj["response"].(map[string]any)
			switch f.event {
			case "response.completed", "response.failed":
				out = r["status"].(string)
			case "response.incomplete":
				d, _ := r["incomplete_details"].(map[string]any)
				out = "incomplete:" + d["reason"].(string)
			}
		case "pi":
			if typ, _ := f.obj["type"].(string); typ == "done" || typ == "error" {
				reason, _ := f.obj["reason"].(string)
				out = typ + ":" + reason
			}
		}
	}
	return out
}

// TestStopReasonMapping drives every upstream stop signal through every
// inbound encoder, streaming and not.
func TestStopReasonMapping(t *testing.T) {
	for _, tc := range stopCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := upstreamNamed(t, tc.upstream)
			tn := turn{text: []string{"Some text."}, finish: tc.finish, stopSeq: tc.stopSeq, usage: usage{input: 5, output: 3}}
			if tc.calls {
				tn.calls = toolsTurn.calls
			}
			want := map[string]string{"messages": tc.messages, "chat": tc.chat, "responses": tc.resp, "pi": tc.pi}
			for _, in := range inbounds {
				success := want[in.name] != "error" && want[in.name] != "failed" && want[in.name][:min(6, len(want[in.name]))] != "error:"
				res := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, true)), okReply(up, tn))
				if res.status != 200 {
					t.Fatalf("%s: stream status %d: %s", in.name, res.status, res.body)
				}
				checkStream(t, in.name, res.body, success || in.name == "pi")
				if got := finalStop(t, in.name, res.body); got != want[in.name] {
					t.Errorf("%s stream: stop %q, want %q", in.name, got, want[in.name])
				}
				whole := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, false)), okReply(up, tn))
				wantStatus := tc.jsonStatus
				if in.name == "pi" && tc.pi == "error:error" {
					wantStatus = 502
				}
				if whole.status != wantStatus {
					t.Errorf("%s non-stream: status %d, want %d: %s", in.name, whole.status, wantStatus, whole.body)
				}
				if whole.status == 200 {
					checkJSONStop(t, in.name, whole.body, want[in.name])
				}
			}
		})
	}
}

// toolsBodies2 is the first scenario's body (the stop tables reuse it).
func toolsBodies2(in, model string, stream bool) string {
	return fill(toolsBodies[in], in, model, stream)
}

// checkJSONStop checks the stop value of a non-streaming body against the
// streamed one.
func checkJSONStop(t *testing.T, in string, body []byte, want string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	got := ""
	switch in {
	case "messages":
		got, _ = m["stop_reason"].(string)
		if seq, ok := m["stop_sequence"].(string); ok {
			got += "/" + seq
		}
	case "chat":
		got, _ = m["choices"].([]any)[0].(map[string]any)["finish_reason"].(string)
	case "responses":
		got, _ = m["status"].(string)
		if d, ok := m["incomplete_details"].(map[string]any); ok {
			got += ":" + d["reason"].(string)
		}
	case "pi":
		msg, _ := m["message"].(map[string]any)
		r, _ := msg["stopReason"].(string)
		got = "done:" + r
	}
	if got != want {
		t.Errorf("%s non-stream: stop %q, want %q", in, got, want)
	}
}
