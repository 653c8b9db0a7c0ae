package openai

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// chatTrace runs data lines through a chat parser and records every event
// (deltas copied when kept, to catch views of reused buffers) and the
// final message.
func chatTrace(input []byte, noFast bool) ([]string, *llm.Message) {
	return streamTrace(input, noFast, false)
}

func streamTrace(input []byte, noFast, responses bool) ([]string, *llm.Message) {
	var trace []string
	var deltas []string
	b := llm.NewBuilder(llm.APIOpenAIChat, "p", "m", func(ev llm.Event) bool {
		deltas = append(deltas, ev.Delta) // kept as is: must stay valid
		msg := ""
		if ev.Err != nil {
			msg = ev.Err.Error()
		}
		trace = append(trace, fmt.Sprintf("%s %d %q %q %s %s", ev.Type, ev.ContentIndex, ev.Delta, ev.Content, ev.Reason, msg))
		return true
	})
	cp := newChatParser(b)
	cp.noFast = noFast
	handle := cp.handle
	if responses {
		rp := newRespParser(b, llm.APIOpenAIResponses)
		rp.noFast = noFast
		handle = rp.handle
	}
	for _, line := range bytes.Split(input, []byte("\n")) {
		buf := bytes.Clone(line)
		if !handle(buf) {
			break
		}
		for i := range buf { // the SSE reader reuses its buffer
			buf[i] = 'X'
		}
	}
	if !b.Ended() {
		b.Fail(llm.ErrTruncated)
	}
	for i, d := range deltas {
		trace = append(trace, fmt.Sprintf("kept delta %d %q", i, d))
	}
	return trace, b.Message()
}

func FuzzChatChunkFastMatchesSlow(f *testing.F) {
	for _, n := range []string{"chat_parallel_tools.sse", "chat_interleaved_crlf.sse", "chat_midstream_error.sse", "chat_content_filter.sse"} {
		f.Add(dataLines(f, n))
	}
	f.Add(chatDeltaChunk)
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"a\u00e9\n","Content":"x"}}]}` + "\n" +
		`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}` + "\n" +
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}],"usage":null}`))
	// Keys that encoding/json folds to known ones across byte lengths (U+017F folds to s).
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"hi"},"finiſh_reaſon":"length"}],"uſage":{"prompt_tokens":7,"completion_tokens":3}}`))
	f.Fuzz(func(t *testing.T, input []byte) {
		slowTrace, slowMsg := chatTrace(input, true)
		fastTrace, fastMsg := chatTrace(input, false)
		if !reflect.DeepEqual(slowTrace, fastTrace) {
			t.Fatalf("events differ:\nslow %q\nfast %q", slowTrace, fastTrace)
		}
		if !reflect.DeepEqual(slowMsg.Content, fastMsg.Content) || slowMsg.StopReason != fastMsg.StopReason ||
			slowMsg.ResponseID != fastMsg.ResponseID || slowMsg.Usage != fastMsg.Usage || slowMsg.Stop != fastMsg.Stop {
			t.Fatalf("messages differ:\nslow %+v\nfast %+v", slowMsg, fastMsg)
		}
	})
}

func TestChatChunkFastPathTakesTheCommonShapes(t *testing.T) {
	var f chatFast
	var c chatChunk
	for _, s := range []string{
		string(chatDeltaChunk),
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":null}],"usage":null}`,
	} {
		if !f.decode([]byte(s), &c) {
			t.Errorf("fast path refused %s", s)
		}
	}
	for _, s := range []string{`{"choices":[],"Choices":[]}`, `{"choices":[{"index":1.5}]}`, `{"usage":{"prompt_tokens":1}}`, `{"id":"a","id":"b"}`, `{"choices":[{}]} x`} {
		if f.decode([]byte(s), &c) {
			t.Errorf("fast path took %s", s)
		}
	}
}

func FuzzResponsesDeltaFastMatchesSlow(f *testing.F) {
	for _, n := range []string{"responses_reasoning_tools.sse", "codex_sparse.sse", "responses_error.sse", "responses_incomplete.sse"} {
		f.Add(dataLines(f, n))
	}
	f.Add(respDeltaEvent)
	f.Fuzz(func(t *testing.T, input []byte) {
		slowTrace, slowMsg := streamTrace(input, true, true)
		fastTrace, fastMsg := streamTrace(input, false, true)
		if !reflect.DeepEqual(slowTrace, fastTrace) {
			t.Fatalf("events differ:\nslow %q\nfast %q", slowTrace, fastTrace)
		}
		if !reflect.DeepEqual(slowMsg.Content, fastMsg.Content) || slowMsg.StopReason != fastMsg.StopReason ||
			slowMsg.ResponseID != fastMsg.ResponseID || slowMsg.Usage != fastMsg.Usage || slowMsg.Stop != fastMsg.Stop {
			t.Fatalf("messages differ:\nslow %+v\nfast %+v", slowMsg, fastMsg)
		}
	})
}
