package openai

import (
	"os"
	"testing"

	"github.com/ompgo/omp/pkg/llm/llmtest"
)

func TestDecodeChatRequestRecycled(t *testing.T) {
	golden, err := os.ReadFile("testdata/request_chat.json")
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckRecycled(t, map[string][]byte{
		"agent session": agentChatBody(t),
		"golden":        golden,
		"repeated messages": []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"first list"}],` +
			`"messages":[{"role":"system","content":"s"},{"role":"user","content":"last list wins"}]}`),
		"one message": []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`),
	}, []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`),
		DecodeChatRequest, DecodeChatRequestRecycled)
}

func TestDecodeResponsesRequestRecycled(t *testing.T) {
	golden, err := os.ReadFile("testdata/request_responses.json")
	if err != nil {
		t.Fatal(err)
	}
	chat, err := DecodeChatRequest(agentChatBody(t))
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckRecycled(t, map[string][]byte{
		"agent session": AppendResponsesBody(nil, chat, benchModel),
		"golden":        golden,
		"repeated input": []byte(`{"model":"gpt-5","input":[{"role":"user","content":"first"}],` +
			`"input":[{"role":"user","content":"last wins"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`),
		"string input": []byte(`{"model":"gpt-5","instructions":"be brief","input":"hi"}`),
	}, []byte(`{"input":"no model"}`), DecodeResponsesRequest, DecodeResponsesRequestRecycled)
}

// The recycled arrays hold no block of a released request: the next
// request's blocks are all its own.
func TestRecycledBlocksDoNotLeakAcrossRequests(t *testing.T) {
	a := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"A1"},{"type":"text","text":"A2"},{"type":"text","text":"A3"}]}]}`)
	b := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"B1"}]}`)
	_, release, err := DecodeChatRequestRecycled(a)
	if err != nil {
		t.Fatal(err)
	}
	release()
	req, release, err := DecodeChatRequestRecycled(b)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	m := req.Messages[0]
	if len(m.Content) != 1 || m.Content[0].Text != "B1" {
		t.Fatalf("second request's content %+v", m.Content)
	}
	if full := m.Content[:cap(m.Content)]; len(full) != 1 {
		t.Fatalf("a block slice reaches %d blocks of its array", len(full))
	}
}
