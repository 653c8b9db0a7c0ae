package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// Case 23: interleaved fragments of two parallel Chat tool calls come out
// as two complete, sequential calls in every inbound format.
func TestInterleavedChatToolDeltas(t *testing.T) {
	up := upstreamNamed(t, "openai-chat")
	head := `data: {"id":"chatcmpl-up2","object":"chat.completion.chunk","created":1,"model":"gpt-5-mini","choices":[{"index":0,"delta":`
	tailNull := `,"finish_reason":null}]}` + "\n\n"
	script := head + `{"role":"assistant","content":null}` + tailNull +
		head + `{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":""}}]}` + tailNull +
		head + `{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"get_time","arguments":""}}]}` + tailNull +
		head + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}` + tailNull +
		head + `{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"JST\"}"}}]}` + tailNull +
		head + `{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}` + tailNull +
		head + `{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"id":"chatcmpl-up2","object":"chat.completion.chunk","created":1,"model":"gpt-5-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}` + "\n\n" +
		"data: [DONE]\n\n"
	reply := upstreamReply{status: 200, contentType: sseType, body: script}
	for _, in := range inbounds {
		res := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, true)), reply)
		checkStream(t, in.name, res.body, true)
		calls := res.final.Content
		if len(calls) != 2 || string(calls[0].Arguments) != `{"city":"Paris"}` || string(calls[1].Arguments) != `{"tz":"JST"}` ||
			calls[0].Name != "get_weather" || calls[1].Name != "get_time" {
			t.Fatalf("%s: calls %+v", in.name, calls)
		}
		whole := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, false)), reply)
		checkParity(t, in.name, res.body, whole.body)
	}
}

// Case 67: a tool call that ends without argument text (Anthropic sends no
// input_json_delta for a no-argument tool) is emitted with arguments "{}"
// on C and R, and input {} on A.
func TestNoArgumentToolCall(t *testing.T) {
	up := upstreamNamed(t, "anthropic")
	tn := turn{calls: []call{{id: "toolu_now", name: "now"}}, usage: usage{input: 3, output: 2}}
	for _, in := range inbounds {
		res := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, true)), okReply(up, tn))
		checkStream(t, in.name, res.body, true)
		whole := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, false)), okReply(up, tn))
		checkParity(t, in.name, res.body, whole.body)
		var m map[string]any
		if err := json.Unmarshal(whole.body, &m); err != nil {
			t.Fatal(err)
		}
		var args any
		switch in.name {
		case "messages":
			args = mustJSON(m["content"].([]any)[0].(map[string]any)["input"])
		case "chat":
			msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			args = msg["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]
			if !strings.Contains(string(res.body), `"arguments":"{}"`) {
				t.Errorf("chat stream never sends the arguments {}")
			}
		case "responses":
			args = m["output"].([]any)[0].(map[string]any)["arguments"]
		case "pi":
			args = mustJSON(m["message"].(map[string]any)["content"].([]any)[0].(map[string]any)["arguments"])
		}
		if args != "{}" {
			t.Errorf("%s: arguments %v, want {}", in.name, args)
		}
	}
}
