package pinative

import (
	"reflect"
	"testing"
)

// decodeOne is DecodeRequest of a request holding only raw as its message.
func decodeOne(raw []byte) (*Request, error) {
	body := append([]byte(`{"modelId":"s","context":{"messages":[`), raw...)
	return DecodeRequest(append(body, "]}}"...))
}

func TestDecodeMessagesMatchesDecodeRequest(t *testing.T) {
	raws := [][]byte{
		[]byte(`{"role":"user","content":"hi \u00e9","timestamp":1}`),
		[]byte(`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"toolCall","id":"t","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","stopReason":"toolUse","usage":{"input":3,"output":4,"cost":{"total":0.5}},"timestamp":2}`),
		[]byte(`{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{"type":"text","text":"out"}],"isError":false,"details":{"x":1}}`),
		[]byte(`{"role":"custom","customType":"note","content":"x"}`), // not an LLM role: declined
		[]byte(`{"role":"user","content":"x"} trailing`),              // not one value: declined
		[]byte(`{"role":"user","content":`),                           // truncated: declined
		[]byte(`{"role":"user","Content":"folded key"}`),              // encoding/json would fold it: declined
		[]byte(`{"role":"developer","content":[]}`),
	}
	msgs, ok := DecodeMessages(raws)
	if len(msgs) != len(raws) || len(ok) != len(raws) {
		t.Fatalf("got %d messages, %d flags for %d raws", len(msgs), len(ok), len(raws))
	}
	wantOK := []bool{true, true, true, false, false, false, false, true}
	for i, raw := range raws {
		if ok[i] != wantOK[i] {
			t.Errorf("raw %d: ok = %v, want %v", i, ok[i], wantOK[i])
			continue
		}
		if !ok[i] {
			continue
		}
		req, err := decodeOne(raw)
		if err != nil {
			t.Fatalf("raw %d: DecodeRequest: %v", i, err)
		}
		if !reflect.DeepEqual(msgs[i], req.Canonical.Messages[0]) {
			t.Errorf("raw %d:\n batch   %+v\n request %+v", i, msgs[i], req.Canonical.Messages[0])
		}
	}
	// The messages own their memory: scribbling over the raws changes nothing.
	before := msgs[0].Content[0].Text
	for _, r := range raws {
		for j := range r {
			r[j] = 'x'
		}
	}
	if msgs[0].Content[0].Text != before || msgs[1].Content[1].Name != "bash" {
		t.Fatalf("decoded messages alias their input")
	}
}

// FuzzDecodeMessagesMatchesDecodeRequest checks every message the batch
// decoder accepts against DecodeRequest of a request holding it alone.
func FuzzDecodeMessagesMatchesDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"hi"}`), []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"t"}],"stopReason":"stop"}`))
	f.Add([]byte(`{"role":"toolResult","content":"\ud83d\ude00"}`), []byte(`nope`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		msgs, ok := DecodeMessages([][]byte{a, b})
		for i, raw := range [][]byte{a, b} {
			if !ok[i] {
				continue
			}
			req, err := decodeOne(raw)
			if err != nil {
				t.Fatalf("batch accepted %q, DecodeRequest rejected: %v", raw, err)
			}
			if len(req.Canonical.Messages) != 1 || !reflect.DeepEqual(msgs[i], req.Canonical.Messages[0]) {
				t.Fatalf("batch and request disagree on %q\n batch   %+v\n request %+v", raw, msgs[i], req.Canonical.Messages)
			}
		}
	})
}
