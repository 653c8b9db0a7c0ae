package anthropic

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

func TestDecodeClaudeCodeRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/inbound_claude_code.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxTokens != 32000 || !r.Stream || r.ThinkingBudget != 16000 || r.Reasoning != llm.EffortHigh ||
		r.ParallelToolCalls == nil || *r.ParallelToolCalls || r.ToolChoice.Mode != llm.ToolChoiceAuto {
		t.Errorf("options = %+v", r)
	}
	if r.System[1].Cache == nil || r.System[1].Cache.TTL != "1h" || !strings.Contains(r.User, "device_id") {
		t.Errorf("system/user = %+v %q", r.System, r.User)
	}
	if _, ok := r.Extra["context_management"]; !ok || len(r.Extra) != 1 {
		t.Errorf("extra = %v", r.Extra)
	}
	roles := []llm.Role{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	want := []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleToolResult, llm.RoleToolResult, llm.RoleUser}
	if len(roles) != len(want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	tr := r.Messages[3]
	if tr.ToolCallID != "toolu_02" || tr.ToolName != "Read" || !tr.IsError || tr.Cache == nil || len(tr.Content) != 2 {
		t.Errorf("tool result = %+v", tr)
	}
	if r.Tools[1].Native == nil || r.Tools[1].Name != "web_search" {
		t.Errorf("server tool = %+v", r.Tools[1])
	}
	// Same-family upstream body: golden.
	up := EncodeRequest(nil, r, testModel, false, true)
	if !json.Valid(up) {
		t.Fatalf("invalid upstream JSON: %s", up)
	}
	llmtest.Golden(t, "inbound_claude_code.upstream.json", up)
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct{ name, body, msg string }{
		{"invalid json", `{"model":`, "Invalid JSON body: "},
		{"missing model", `{"max_tokens":1,"messages":[]}`, "Missing top-level `model` field"},
		{"missing max_tokens", `{"model":"m","messages":[]}`, "anthropic-messages: `max_tokens` is required"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, "anthropic-messages: messages[0].role"},
		{"wrong type", `{"model":"m","max_tokens":"many","messages":[]}`, "anthropic-messages: invalid `max_tokens`: expected number, got string"},
		{"bad tool choice", `{"model":"m","max_tokens":1,"messages":[],"tool_choice":{"type":"sometimes"}}`, "anthropic-messages: unknown tool_choice.type"},
		{"not an object", `[1]`, "anthropic-messages: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			var ir *llm.InvalidRequestError
			if !errors.As(err, &ir) || !strings.HasPrefix(ir.Message, tt.msg) {
				t.Fatalf("err = %v, want prefix %q", err, tt.msg)
			}
			if status, body := EncodeError(err); status != 400 || !strings.Contains(string(body), `"invalid_request_error"`) {
				t.Fatalf("EncodeError = %d %s", status, body)
			}
		})
	}
}

func TestEncodeRequestFromForeignHistory(t *testing.T) {
	f := false
	r := &llm.Request{
		Model: "m", Reasoning: llm.EffortMedium, MaxTokens: 4000, Temperature: ptr(1.5), TopK: ptr(5),
		ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}, ParallelToolCalls: &f, StopSequences: []string{"END"},
		Messages: []llm.Message{
			{Role: llm.RoleDeveloper, Content: []llm.Content{llm.Text("Be exact.")}},
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi"), {Type: llm.ContentImage, Extra: &llm.ContentExtra{URL: "data:image/jpg;base64,AAAA"}}}},
			{Role: llm.RoleAssistant, API: llm.APIOpenAIResponses, Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: "foreign", ThinkingSignature: "rs_1"},
				llm.Text("  "),
				{Type: llm.ContentToolCall, ID: "call_1|fc_1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)},
				{Type: llm.ContentToolCall, ID: "call_2", Name: "f", Arguments: json.RawMessage(`{}`)},
			}},
			{Role: llm.RoleToolResult, ToolCallID: "call_2", Content: []llm.Content{llm.Text("r2")}},
			{Role: llm.RoleToolResult, ToolCallID: "call_1|fc_1", Content: []llm.Content{llm.Text("r1")}},
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("next")}},
		},
		Tools:     []llm.Tool{{Name: "f", Parameters: json.RawMessage(`{"properties":{"a":{"type":"number"}}}`)}, {Name: "g"}},
		OriginAPI: llm.APIOpenAIChat, Extra: map[string]json.RawMessage{"response_format": json.RawMessage(`{}`)},
	}
	up := EncodeRequest(nil, r, llm.Model{ID: "m", Reasoning: true}, false, true)
	llmtest.Golden(t, "foreign_history.upstream.json", up)
}

func ptr[T any](v T) *T { return &v }

func TestStreamEncoderGolden(t *testing.T) {
	m := scripted()
	m.Content = append([]llm.Content{{Type: llm.ContentRedactedThinking, Data: "EmwK"}}, m.Content...)
	m.Content = append(m.Content, llm.Native(llm.APIOpenAIResponses, json.RawMessage(`{}`)))
	enc := NewStreamEncoder("claude-x", "msg_local")
	var out []byte
	for ev := range llmtest.Replay(m, 8).Events() {
		out = enc.Encode(out, &ev)
	}
	llmtest.Golden(t, "stream_encoded.sse", out)
	checkAnthropicFraming(t, out)
}

// checkAnthropicFraming asserts the Messages stream framing rules on an
// encoded stream: event names match data.type, blocks open in index order
// and close before the next opens, message_delta carries output_tokens,
// and no foreign raw value leaks.
func checkAnthropicFraming(t *testing.T, stream []byte) {
	t.Helper()
	rd := sse.NewReader(strings.NewReader(string(stream)))
	next, open := 0, -1
	var names []string
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		var d struct {
			Type  string `json:"type"`
			Index *int   `json:"index"`
			Usage *struct {
				OutputTokens *int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil || ev.Unterminated {
			t.Fatalf("bad frame %q: %v", ev.Data, err)
		}
		if ev.Name == "" || ev.Name != d.Type {
			t.Fatalf("event name %q != data.type %q", ev.Name, d.Type)
		}
		names = append(names, d.Type)
		switch d.Type {
		case "content_block_start":
			if d.Index == nil || *d.Index != next || open >= 0 {
				t.Fatalf("block start index %v, want %d", d.Index, next)
			}
			open, next = *d.Index, next+1
		case "content_block_delta", "content_block_stop":
			if d.Index == nil || *d.Index != open {
				t.Fatalf("%s index %v, open %d", d.Type, d.Index, open)
			}
			if d.Type == "content_block_stop" {
				open = -1
			}
		case "message_delta":
			if d.Usage == nil || d.Usage.OutputTokens == nil {
				t.Fatal("message_delta without usage.output_tokens")
			}
		}
	}
	if len(names) < 2 || names[0] != "message_start" || (names[len(names)-1] != "message_stop" && names[len(names)-1] != "error") {
		t.Fatalf("frames = %v", names)
	}
}

func TestStopMapping(t *testing.T) {
	tests := []struct {
		raw    string
		reason llm.StopReason
		safety bool
		backTo string
	}{
		{"end_turn", llm.StopEnd, false, "end_turn"},
		{"stop_sequence", llm.StopEnd, false, "stop_sequence"},
		{"max_tokens", llm.StopLength, false, "max_tokens"},
		{"model_context_window_exceeded", llm.StopLength, false, "model_context_window_exceeded"},
		{"tool_use", llm.StopToolUse, false, "tool_use"},
		{"pause_turn", llm.StopEnd, false, "pause_turn"},
		{"refusal", llm.StopError, true, "refusal"},
		{"something_new", llm.StopEnd, false, "end_turn"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			seq := ""
			if tt.raw == "stop_sequence" {
				seq = "END"
			}
			reason, d := StopFromWire(tt.raw, seq)
			if reason != tt.reason || d.Safety != tt.safety {
				t.Fatalf("StopFromWire = %v %+v", reason, d)
			}
			if back, s := StopToWire(reason, d); back != tt.backTo || s != seq {
				t.Fatalf("StopToWire = %q %q, want %q", back, s, tt.backTo)
			}
		})
	}
	// Foreign raw values never leak.
	for _, d := range []llm.StopDetail{{Raw: "content_filter", API: llm.APIOpenAIChat, Safety: true}, {Raw: "pause_turn", API: llm.APIOpenAIChat}} {
		r := llm.StopEnd
		if d.Safety {
			r = llm.StopError
		}
		if got, _ := StopToWire(r, d); got != "refusal" && got != "end_turn" {
			t.Fatalf("foreign %+v → %q", d, got)
		}
	}
	if got, _ := StopToWire(llm.StopLength, llm.StopDetail{Raw: "model_context_window_exceeded", API: llm.APIOpenAIChat}); got != "max_tokens" {
		t.Fatalf("foreign raw leaked: %q", got)
	}
}

func TestErrorStatusMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		typ    string
	}{
		{"anthropic type kept", &llm.UpstreamError{Status: 529, Type: "overloaded_error"}, 529, "overloaded_error"},
		{"openai 429 mapped", &llm.UpstreamError{Status: 429, Type: "insufficient_quota"}, 429, "rate_limit_error"},
		{"503 becomes 529", &llm.UpstreamError{Status: 503}, 529, "overloaded_error"},
		{"403", &llm.UpstreamError{Status: 403}, 403, "permission_error"},
		{"404", &llm.UpstreamError{Status: 404}, 404, "not_found_error"},
		{"413", &llm.UpstreamError{Status: 413}, 413, "request_too_large"},
		{"504", &llm.UpstreamError{Status: 504}, 504, "timeout_error"},
		{"transport error", errors.New("connection reset"), 502, "api_error"},
		{"invalid request", llm.InvalidRequestf("bad"), 400, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, typ := ErrorStatus(tt.err); s != tt.status || typ != tt.typ {
				t.Fatalf("ErrorStatus = %d %s, want %d %s", s, typ, tt.status, tt.typ)
			}
		})
	}
}

func TestEncodeMessageSafetyIsRefusal(t *testing.T) {
	m := &llm.Message{StopReason: llm.StopError, Stop: llm.StopDetail{Raw: "SAFETY", API: llm.APIGoogle, Safety: true}}
	out, err := EncodeMessage(nil, m, "m", "msg_1")
	if err != nil || !strings.Contains(string(out), `"stop_reason":"refusal"`) || !strings.Contains(string(out), `"content":[]`) {
		t.Fatalf("EncodeMessage = %s, %v", out, err)
	}
	m.Stop.Safety = false
	if _, err := EncodeMessage(nil, m, "m", "msg_1"); !errors.Is(err, ErrNotComplete) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	if b, err := os.ReadFile("testdata/inbound_claude_code.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"f","input":"str"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body)
		if err != nil {
			var ir *llm.InvalidRequestError
			if !errors.As(err, &ir) {
				t.Fatalf("non-typed error %T: %v", err, err)
			}
			return
		}
		for _, oauth := range []bool{false, true} {
			if out := EncodeRequest(nil, r, llm.Model{}, oauth, true); !json.Valid(out) {
				t.Fatalf("upstream body is invalid JSON: %s", out)
			}
		}
	})
}

// Claude Code sends mid-conversation system entries in messages[] for its
// newest models; they decode to developer messages, which the Anthropic
// upstream hoists into top-level system blocks in order.
func TestDecodeMidConversationSystem(t *testing.T) {
	body := `{"model":"claude-opus-4-8","max_tokens":5,"system":"top","messages":[` +
		`{"role":"user","content":"hi"},` +
		`{"role":"system","content":[{"type":"text","text":"agent types: a, b","cache_control":{"type":"ephemeral"}}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	if len(req.Messages) != 2 || req.Messages[1].Role != llm.RoleDeveloper || req.Messages[1].Content[0].Text != "agent types: a, b" {
		t.Fatalf("messages = %+v, want user then a developer message", req.Messages)
	}
	out := string(EncodeRequest(nil, req, llm.Model{ID: "claude-opus-4-8", Provider: "anthropic"}, false, true))
	if !strings.Contains(out, `"system":[{"type":"text","text":"top"},{"type":"text","text":"agent types: a, b","cache_control":{"type":"ephemeral"}}]`) {
		t.Errorf("encoded request does not hoist the system entry after the top-level system:\n%s", out)
	}
	if strings.Contains(out, `"role":"system"`) {
		t.Errorf("encoded request still has a system role in messages:\n%s", out)
	}
	_, err = DecodeRequest([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":[{"type":"image","source":{"type":"url","url":"http://x"}}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "a system message may hold only text blocks") {
		t.Errorf("image in a system message: err = %v", err)
	}
}
