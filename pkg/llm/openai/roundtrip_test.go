package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/internal/sse"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// codecServer is a gateway in miniature: it decodes the inbound body with
// our codec, plays the script as the upstream and encodes the events back.
func codecServer(t *testing.T, s script, gotReq **llm.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := httpx.ReadJSON(w, r, 1<<20, false)
		if err != nil {
			t.Errorf("read body: %v", err)
			return
		}
		var req *llm.Request
		var enc interface {
			Append([]byte, *llm.Event) []byte
		}
		switch r.URL.Path {
		case "/chat/completions":
			req, err = DecodeChatRequest(body)
			if err == nil {
				enc = NewChatStream(ChatOptions{ID: "chatcmpl-rt", Model: req.Model, Created: 1700000000, IncludeUsage: req.IncludeStreamingUsage})
			}
		case "/responses":
			req, err = DecodeResponsesRequest(body)
			if err == nil {
				enc = NewResponsesStream(ResponsesOptions{ID: "resp_rt", Model: req.Model, Created: 1700000000})
			}
		}
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write(AppendErrorBody(nil, 400, err.Error(), false))
			return
		}
		if gotReq != nil {
			*gotReq = req
		}
		if !req.Stream {
			t.Errorf("client did not ask for a stream")
		}
		sse.SetHeaders(w.Header())
		sw := sse.NewHTTPWriter(w, 0)
		var frames []byte
		s.play(llm.APIAnthropic, func(ev *llm.Event) {
			frames = enc.Append(frames[:0], ev)
			if len(frames) > 0 {
				if err := sw.WriteFrames(frames); err != nil {
					t.Errorf("write: %v", err)
				}
			}
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func TestOpenAIGoChatAccumulatorRebuildsParallelToolCalls(t *testing.T) {
	var got *llm.Request
	srv := codecServer(t, agentScript, &got)
	client := newClient(srv.URL)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("Weather in Paris, and the time?"),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	n := 0
	for stream.Next() {
		n++
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("AddChunk rejected chunk %d: %s", n, stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got.System[0].Text != "Be brief." || got.Messages[0].TextContent() != "Weather in Paris, and the time?" {
		t.Errorf("decoded request = %+v", got)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("choices = %d", len(acc.Choices))
	}
	ch := acc.Choices[0]
	if want := "Checking the \"weather\"\n"; ch.Message.Content != want {
		t.Errorf("content = %q, want %q", ch.Message.Content, want)
	}
	if ch.FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q", ch.FinishReason)
	}
	want := []struct{ id, name, args string }{{"call_paris", "get_weather", `{"city":"Paris"}`}, {"call_time", "get_time", `{}`}}
	if len(ch.Message.ToolCalls) != len(want) {
		t.Fatalf("tool calls = %+v", ch.Message.ToolCalls)
	}
	for i, w := range want {
		tc := ch.Message.ToolCalls[i]
		if tc.ID != w.id || tc.Function.Name != w.name || tc.Function.Arguments != w.args {
			t.Errorf("tool call %d = %s %s %s, want %+v", i, tc.ID, tc.Function.Name, tc.Function.Arguments, w)
		}
	}
	u := acc.Usage
	if u.PromptTokens != 120 || u.CompletionTokens != 40 || u.TotalTokens != 160 ||
		u.PromptTokensDetails.CachedTokens != 100 || u.CompletionTokensDetails.ReasoningTokens != 12 {
		t.Errorf("usage = %+v", u)
	}
}

func TestOpenAIGoChatStreamReportsMidStreamError(t *testing.T) {
	s := script{text: []string{"Part"}, fail: &llm.UpstreamError{Status: 500, Message: "boom"}}
	srv := codecServer(t, s, nil)
	client := newClient(srv.URL)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	for stream.Next() {
	}
	if stream.Err() == nil {
		t.Fatal("a mid-stream failure was reported as success")
	}
}

func TestOpenAIGoResponsesStreamRebuildsOutput(t *testing.T) {
	var got *llm.Request
	srv := codecServer(t, agentScript, &got)
	client := newClient(srv.URL)
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model:        "gpt-test",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris, and the time?")},
	})
	var final responses.Response
	var text string
	args := map[string]string{}
	seq := int64(0)
	terminals := 0
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Fatalf("sequence_number = %d, want %d", ev.SequenceNumber, seq)
		}
		seq++
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			text += e.Delta
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			args[e.ItemID] += e.Delta
		case responses.ResponseCompletedEvent:
			final = e.Response
			terminals++
		case nil:
			t.Errorf("event outside the SDK union: %s", ev.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if terminals != 1 {
		t.Fatalf("terminal events = %d", terminals)
	}
	if got.System[0].Text != "Be brief." || got.Messages[0].TextContent() != "Weather in Paris, and the time?" {
		t.Errorf("decoded request = %+v", got)
	}
	if want := "Checking the \"weather\"\n"; text != want || final.OutputText() != want {
		t.Errorf("text = %q, OutputText = %q, want %q", text, final.OutputText(), want)
	}
	var calls []responses.ResponseFunctionToolCall
	var reasoning []responses.ResponseReasoningItem
	for _, it := range final.Output {
		switch v := it.AsAny().(type) {
		case responses.ResponseFunctionToolCall:
			calls = append(calls, v)
		case responses.ResponseReasoningItem:
			reasoning = append(reasoning, v)
		}
	}
	if len(reasoning) != 1 || reasoning[0].Summary[0].Text != "Plan the calls." || reasoning[0].EncryptedContent == "" {
		t.Errorf("reasoning = %+v", reasoning)
	}
	want := []struct{ callID, name, args string }{{"call_paris", "get_weather", `{"city":"Paris"}`}, {"call_time", "get_time", `{}`}}
	if len(calls) != 2 {
		t.Fatalf("function calls = %+v", calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.CallID != w.callID || c.Name != w.name || c.Arguments != w.args || args[c.ID] != w.args || c.ID == c.CallID {
			t.Errorf("call %d = %+v (streamed args %q), want %+v", i, c, args[c.ID], w)
		}
	}
	u := final.Usage
	if u.InputTokens != 120 || u.OutputTokens != 40 || u.TotalTokens != 160 ||
		u.InputTokensDetails.CachedTokens != 100 || u.OutputTokensDetails.ReasoningTokens != 12 {
		t.Errorf("usage = %+v", u)
	}
	// The reasoning item replays: decoding it back restores the signature.
	raw, _ := json.Marshal(map[string]any{"model": "m", "input": []any{json.RawMessage(reasoning[0].RawJSON())}})
	back, err := DecodeResponsesRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Messages[0].Content[0]; c.ThinkingSignature != agentScript.thinkingSig || back.Messages[0].API != llm.APIAnthropic {
		t.Errorf("replayed reasoning = %+v (api %s)", c, back.Messages[0].API)
	}
}

func TestOpenAIGoSeesRequestErrorsAsAPIErrors(t *testing.T) {
	srv := codecServer(t, agentScript, nil)
	client := newClient(srv.URL)
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" {
		t.Fatalf("err = %v", err)
	}
}
