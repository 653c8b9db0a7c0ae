package anthropic

import (
	"os"
	"testing"

	"github.com/ompgo/omp/pkg/llm/llmtest"
)

func TestDecodeRequestRecycled(t *testing.T) {
	golden, err := os.ReadFile("testdata/inbound_claude_code.json")
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckRecycled(t, map[string][]byte{
		"agent session": agentRequest(t),
		"claude code":   golden,
		"repeated messages": []byte(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"first"}],` +
			`"messages":[{"role":"user","content":"last wins"},{"role":"assistant","content":[{"type":"text","text":"ok"}]}]}`),
		"one message": []byte(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`),
	}, []byte(`{"max_tokens":8,"messages":[]}`), DecodeRequest, DecodeRequestRecycled)
}
