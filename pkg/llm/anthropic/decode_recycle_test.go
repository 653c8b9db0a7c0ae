package anthropic

import (
	"os"
	"reflect"
	"testing"
)

// A recycled decoding gives the request DecodeRequest gives, request
// after request on the same recycled arrays, and release drops the
// messages.
func TestDecodeRequestRecycled(t *testing.T) {
	golden, err := os.ReadFile("testdata/inbound_claude_code.json")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{
		"agent session": agentRequest(t),
		"claude code":   golden,
		"repeated messages": []byte(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"first"}],` +
			`"messages":[{"role":"user","content":"last wins"},{"role":"assistant","content":[{"type":"text","text":"ok"}]}]}`),
		"one message": []byte(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`),
	}
	for round := range 3 {
		for name, body := range bodies {
			want, err := DecodeRequest(body)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, release, err := DecodeRequestRecycled(body)
			if err != nil {
				t.Fatalf("%s recycled: %v", name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %s: the recycled decoding differs:\n got %+v\nwant %+v", round, name, got.Messages, want.Messages)
			}
			release()
			if got.Messages != nil {
				t.Fatalf("%s: messages still reachable after release", name)
			}
		}
	}
	req, release, err := DecodeRequestRecycled([]byte(`{"max_tokens":8,"messages":[]}`))
	if err == nil || req != nil || release == nil {
		t.Fatalf("bad body: req %v, err %v", req, err)
	}
	release()
}
