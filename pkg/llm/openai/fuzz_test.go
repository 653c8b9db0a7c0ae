package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

var fuzzModel = llm.Model{ID: "m", Reasoning: true}

// checkBodies re-encodes a decoded request for every upstream and checks
// that each body is valid JSON.
func checkBodies(t *testing.T, req *llm.Request) {
	for name, body := range map[string][]byte{
		"chat":      AppendChatBody(nil, req, fuzzModel, ResolveChatCompat(fuzzModel, "")),
		"chat-oss":  AppendChatBody(nil, req, fuzzModel, ResolveChatCompat(fuzzModel, "http://x")),
		"responses": AppendResponsesBody(nil, req, fuzzModel),
		"codex":     AppendCodexBody(nil, req, fuzzModel),
	} {
		if !json.Valid(body) {
			t.Fatalf("%s body is not valid JSON: %s", name, body)
		}
	}
}

func addFixtures(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	addFixtures(f, "request_chat.json")
	f.Add([]byte(`{"model":"m","messages":[{"role":"tool","tool_call_id":"x","content":[{"type":"image_url","image_url":"data:image/png;base64,AA"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChatRequest(body)
		if err != nil {
			if _, ok := err.(*RequestError); !ok {
				t.Fatalf("error is %T, not *RequestError", err)
			}
			return
		}
		checkBodies(t, req)
	})
}

func FuzzDecodeResponsesRequest(f *testing.F) {
	addFixtures(f, "request_responses.json")
	f.Add([]byte(`{"model":"m","input":"hi","tool_choice":{"type":"web_search"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeResponsesRequest(body)
		if err != nil {
			if _, ok := err.(*RequestError); !ok {
				t.Fatalf("error is %T, not *RequestError", err)
			}
			return
		}
		checkBodies(t, req)
	})
}

// fuzzStream feeds SSE data payloads (one per line of input) to a parser
// and checks the canonical contract and that both inbound encoders emit
// valid JSON for every event.
func fuzzStream(t *testing.T, input []byte, responses bool) {
	chat := NewChatStream(ChatOptions{ID: "c", Model: "m", IncludeUsage: true})
	resp := NewResponsesStream(ResponsesOptions{ID: "resp_x", Model: "m"})
	var frames []byte
	terminals, starts := 0, 0
	b := llm.NewBuilder(llm.APIOpenAIChat, "p", "m", func(ev llm.Event) bool {
		if terminals > 0 {
			t.Fatalf("event %v after the terminal event", ev.Type)
		}
		switch {
		case ev.Type == llm.EventStart:
			starts++
		case ev.Type.IsTerminal():
			terminals++
		}
		frames = chat.Append(frames, &ev)
		frames = resp.Append(frames, &ev)
		return true
	})
	handle := newChatParser(b).handle
	if responses {
		handle = newRespParser(b, llm.APIOpenAIResponses).handle
	}
	for _, line := range bytes.Split(input, []byte("\n")) {
		if !handle(line) {
			break
		}
	}
	if !b.Ended() {
		b.Fail(llm.ErrTruncated)
	}
	if terminals != 1 || starts != 1 {
		t.Fatalf("starts=%d terminals=%d", starts, terminals)
	}
	for _, line := range bytes.Split(frames, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if ok && string(data) != "[DONE]" && !json.Valid(data) {
			t.Fatalf("encoder wrote invalid JSON: %s", data)
		}
	}
}

func dataLines(f *testing.F, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	var out []byte
	for _, l := range bytes.Split(bytes.ReplaceAll(b, []byte("\r"), nil), []byte("\n")) {
		if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			out = append(append(out, d...), '\n')
		}
	}
	return out
}

func FuzzChatStreamParser(f *testing.F) {
	for _, n := range []string{"chat_parallel_tools.sse", "chat_interleaved_crlf.sse", "chat_midstream_error.sse", "chat_content_filter.sse"} {
		f.Add(dataLines(f, n))
	}
	f.Fuzz(func(t *testing.T, input []byte) { fuzzStream(t, input, false) })
}

func FuzzResponsesStreamParser(f *testing.F) {
	for _, n := range []string{"responses_reasoning_tools.sse", "codex_sparse.sse", "responses_error.sse", "responses_incomplete.sse"} {
		f.Add(dataLines(f, n))
	}
	f.Fuzz(func(t *testing.T, input []byte) { fuzzStream(t, input, true) })
}
