package conformance

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	antstream "github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	openaisdk "github.com/openai/openai-go/v3"
	oaistream "github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// sseResponse wraps an encoded stream as the HTTP response an SDK reads.
func sseResponse(body []byte) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {sseType}},
		Body: io.NopCloser(bytes.NewReader(body))}
}

// anthropicAccumulate runs a stream through anthropic-sdk-go's decoder and
// Message.Accumulate.
func anthropicAccumulate(t *testing.T, body []byte) (anthropicsdk.Message, error) {
	t.Helper()
	s := antstream.NewStream[anthropicsdk.MessageStreamEventUnion](antstream.NewDecoder(sseResponse(body)), nil)
	defer s.Close()
	var msg anthropicsdk.Message
	n := 0
	for s.Next() {
		n++
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Errorf("Accumulate: %v", err)
		}
	}
	if n == 0 {
		t.Errorf("anthropic-sdk-go saw no events")
	}
	return msg, s.Err()
}

// chatAccumulate runs a stream through openai-go's ChatCompletionAccumulator.
func chatAccumulate(t *testing.T, body []byte) (openaisdk.ChatCompletion, int, error) {
	t.Helper()
	s := oaistream.NewStream[openaisdk.ChatCompletionChunk](oaistream.NewDecoder(sseResponse(body)), nil)
	defer s.Close()
	var acc openaisdk.ChatCompletionAccumulator
	finished := 0
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			t.Errorf("AddChunk returned false")
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished++
			if !json.Valid([]byte(tc.Arguments)) {
				t.Errorf("finished tool call %s has invalid arguments %q", tc.Name, tc.Arguments)
			}
		}
	}
	return acc.ChatCompletion, finished, s.Err()
}

// responsesEvents runs a stream through openai-go's Responses union and
// returns the terminal response.
func responsesTerminal(t *testing.T, body []byte) (*responses.Response, error) {
	t.Helper()
	s := oaistream.NewStream[responses.ResponseStreamEventUnion](oaistream.NewDecoder(sseResponse(body)), nil)
	defer s.Close()
	var final *responses.Response
	for s.Next() {
		ev := s.Current()
		if ev.AsAny() == nil {
			t.Errorf("event %q is unknown to openai-go", ev.Type)
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		}
	}
	return final, s.Err()
}

// checkParity checks that the streamed and the non-streamed answers to
// the same upstream transcript are the same final object, as the SDKs
// see them.
func checkParity(t *testing.T, in string, stream, whole []byte) {
	t.Helper()
	switch in {
	case "messages":
		acc, err := anthropicAccumulate(t, stream)
		if err != nil {
			t.Fatalf("anthropic stream error: %v", err)
		}
		var ns anthropicsdk.Message
		if err := json.Unmarshal(whole, &ns); err != nil {
			t.Fatal(err)
		}
		if acc.StopReason == "" || acc.StopReason != ns.StopReason || acc.Usage.OutputTokens != ns.Usage.OutputTokens ||
			acc.Usage.InputTokens != ns.Usage.InputTokens || acc.Usage.CacheReadInputTokens != ns.Usage.CacheReadInputTokens {
			t.Errorf("stream/non-stream differ: stop %q/%q usage %+v/%+v", acc.StopReason, ns.StopReason, acc.Usage, ns.Usage)
		}
		if len(acc.Content) != len(ns.Content) {
			t.Fatalf("stream has %d blocks, non-stream %d", len(acc.Content), len(ns.Content))
		}
		for i := range acc.Content {
			a, b := acc.Content[i], ns.Content[i]
			if a.Type != b.Type || a.Text != b.Text || a.Thinking != b.Thinking || a.Signature != b.Signature || a.ID != b.ID || a.Name != b.Name || !jsonEqual(a.Input, b.Input) {
				t.Errorf("block %d differs:\n%s\n%s", i, a.RawJSON(), b.RawJSON())
			}
		}
	case "chat":
		acc, finished, err := chatAccumulate(t, stream)
		if err != nil {
			t.Fatalf("openai-go stream error: %v", err)
		}
		var ns openaisdk.ChatCompletion
		if err := json.Unmarshal(whole, &ns); err != nil {
			t.Fatal(err)
		}
		a, b := acc.Choices[0], ns.Choices[0]
		if a.FinishReason != b.FinishReason || a.Message.Content != b.Message.Content || a.Message.Role != b.Message.Role {
			t.Errorf("stream/non-stream differ: finish %q/%q content %q/%q", a.FinishReason, b.FinishReason, a.Message.Content, b.Message.Content)
		}
		if finished != len(b.Message.ToolCalls) || len(a.Message.ToolCalls) != len(b.Message.ToolCalls) {
			t.Fatalf("tool calls: stream %d (finished %d), non-stream %d", len(a.Message.ToolCalls), finished, len(b.Message.ToolCalls))
		}
		for i := range a.Message.ToolCalls {
			x, y := a.Message.ToolCalls[i], b.Message.ToolCalls[i]
			if x.ID != y.ID || x.Function.Name != y.Function.Name || x.Function.Arguments != y.Function.Arguments {
				t.Errorf("tool call %d differs: %+v / %+v", i, x.Function, y.Function)
			}
		}
		if acc.Usage.PromptTokens != ns.Usage.PromptTokens || acc.Usage.CompletionTokens != ns.Usage.CompletionTokens {
			t.Errorf("usage differs: %+v / %+v", acc.Usage, ns.Usage)
		}
	case "responses":
		final, err := responsesTerminal(t, stream)
		if err != nil || final == nil {
			t.Fatalf("openai-go responses stream: terminal %v err %v", final, err)
		}
		if !jsonEqual([]byte(final.RawJSON()), whole) {
			t.Errorf("terminal response differs from the non-stream body:\n%s\n%s", final.RawJSON(), whole)
		}
	case "pi":
		var last map[string]any
		for _, f := range parseFrames(t, stream) {
			if f.obj != nil {
				last = f.obj
			}
		}
		var ns map[string]any
		if err := json.Unmarshal(whole, &ns); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(last["message"], ns["message"]) {
			t.Errorf("done.message differs from the non-stream message:\n%v\n%v", last["message"], ns["message"])
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// checkUpstreamRequest asserts the rules of each upstream's request: path,
// Anthropic headers and max_tokens, anthropic-beta only to Anthropic, Chat
// streaming with include_usage, and the Codex body's fixed fields.
func checkUpstreamRequest(t *testing.T, up upstream, in string, c *captured) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(c.body, &body); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	h := c.header
	if up.name != "anthropic" && h.Get("anthropic-beta") != "" {
		t.Errorf("anthropic-beta reached a non-Anthropic upstream")
	}
	want := map[string]string{
		"anthropic":         "/v1/messages",
		"openai-chat":       "/v1/chat/completions",
		"openai-responses":  "/v1/responses",
		"openai-codex":      "/backend-api/codex/responses",
		"google":            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		"google-gemini-cli": "/v1internal:streamGenerateContent?alt=sse",
	}[up.name]
	if c.path != want {
		t.Errorf("upstream path %q, want %q", c.path, want)
	}
	switch up.name {
	case "anthropic":
		if h.Get("anthropic-version") != "2023-06-01" || h.Get("x-api-key") == "" || body["max_tokens"] == nil || body["stream"] != true {
			t.Errorf("Anthropic request lacks version/key/max_tokens/stream: %v %s", h, c.body)
		}
		if (in == "messages") != (h.Get("anthropic-beta") != "") {
			t.Errorf("anthropic-beta forwarding wrong for inbound %s: %q", in, h.Get("anthropic-beta"))
		}
	case "openai-chat":
		so, _ := body["stream_options"].(map[string]any)
		if body["stream"] != true || so["include_usage"] != true {
			t.Errorf("Chat upstream must stream with include_usage: %s", c.body)
		}
	case "openai-responses":
		if body["stream"] != true {
			t.Errorf("Responses upstream does not stream")
		}
	case "openai-codex":
		inc, _ := body["include"].([]any)
		_, isList := body["input"].([]any)
		_, hasInstr := body["instructions"]
		if body["stream"] != true || body["store"] != false || !slices.Contains(inc, any("reasoning.encrypted_content")) || !isList || !hasInstr {
			t.Errorf("Codex request breaks the Codex request rules (stream/store/include/input/instructions): %s", c.body)
		}
		for _, k := range []string{"max_output_tokens", "max_completion_tokens", "temperature", "top_p", "truncation", "user", "previous_response_id", "prompt_cache_retention", "safety_identifier", "stream_options"} {
			if _, ok := body[k]; ok {
				t.Errorf("Codex request carries the forbidden field %s", k)
			}
		}
		if h.Get("chatgpt-account-id") == "" || !strings.HasPrefix(h.Get("Authorization"), "Bearer ") {
			t.Errorf("Codex request lacks account id / bearer")
		}
	case "google":
		if h.Get("x-goog-api-key") == "" || body["contents"] == nil {
			t.Errorf("Gemini request lacks key/contents")
		}
	case "google-gemini-cli":
		r, _ := body["request"].(map[string]any)
		if body["project"] != "proj-conformance" || body["model"] == nil || r["contents"] == nil {
			t.Errorf("Code Assist envelope wrong: %s", c.body)
		}
	}
}
