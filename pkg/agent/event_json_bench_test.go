package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/pinative"
	"github.com/ompgo/omp/tools/benchcpu"
)

// replyDeltas is the message_update stream of one streamed text reply of
// about 3 KB, one event per token-sized delta, each with the partial
// message as it stood then.
func replyDeltas() []Event {
	text := strings.Repeat("The handler returns an error; the adapter renders it as `{\"error\": \"…\"}` with the status from the table. ", 30)
	var out []Event
	b := llm.NewBuilder("anthropic-messages", "anthropic", "claude-sonnet-4-5", func(e llm.Event) bool {
		cp := e
		if e.Partial != nil {
			pm := *e.Partial
			pm.Content = append([]llm.Content(nil), e.Partial.Content...)
			cp.Partial = &pm
		}
		if cp.Type == llm.EventTextDelta {
			out = append(out, Event{Type: EventMessageUpdate, Assistant: &cp})
		}
		return true
	})
	b.Start()
	b.StartText()
	for len(text) > 0 {
		n := min(4, len(text))
		for n < len(text) && !strings.HasPrefix(text[n:], " ") && n < 8 {
			n++
		}
		b.Text(text[:n])
		text = text[n:]
	}
	b.EndBlock()
	b.Done(llm.StopEnd)
	return out
}

// The encoding/json mirrors of a message_update event.
type (
	deltaEventJSON struct {
		Type         string `json:"type"`
		ContentIndex int    `json:"contentIndex"`
		Delta        string `json:"delta"`
	}
	reducedUpdateJSON struct {
		Type                  string         `json:"type"`
		AssistantMessageEvent deltaEventJSON `json:"assistantMessageEvent"`
	}
	fullUpdateJSON struct {
		Type                  string          `json:"type"`
		Message               json.RawMessage `json:"message"`
		AssistantMessageEvent json.RawMessage `json:"assistantMessageEvent"`
	}
)

// BenchmarkEventStream encodes the event stream of one streamed reply as
// omp writes it per token delta: mode=json is the reduced shape of
// `--mode json`, mode=rpc the full shape of `--mode rpc` (with the
// partial message). impl=encoding_json marshals an equivalent struct; in
// the rpc shape the message and stream event still come from the
// pi-native encoder, as the struct would have to hold them as raw JSON.
func BenchmarkEventStream(b *testing.B) {
	evs := replyDeltas()
	for _, mode := range []string{"json", "rpc"} {
		reduced := mode == "json"
		b.Run("mode="+mode+"/impl=fast", func(b *testing.B) {
			defer benchcpu.Start(b)()
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				for i := range evs {
					buf = evs[i].AppendJSON(buf[:0], reduced)
				}
			}
		})
		b.Run("mode="+mode+"/impl=encoding_json", func(b *testing.B) {
			defer benchcpu.Start(b)()
			b.ReportAllocs()
			var msg, ev []byte
			for b.Loop() {
				for i := range evs {
					a := evs[i].Assistant
					var err error
					if reduced {
						_, err = json.Marshal(reducedUpdateJSON{Type: evs[i].Type, AssistantMessageEvent: deltaEventJSON{
							Type: a.Type.String(), ContentIndex: a.ContentIndex, Delta: a.Delta}})
					} else {
						msg = pinative.AppendMessage(msg[:0], a.Partial)
						ev = pinative.AppendEvent(ev[:0], a)
						_, err = json.Marshal(fullUpdateJSON{Type: evs[i].Type, Message: msg, AssistantMessageEvent: ev})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestEventStreamMirrorsAgree: the encoding/json mirrors of the benchmark
// write what AppendJSON writes, so the two sides do the same work.
func TestEventStreamMirrorsAgree(t *testing.T) {
	evs := replyDeltas()
	if len(evs) < 100 {
		t.Fatalf("only %d deltas", len(evs))
	}
	for _, e := range evs[:20] {
		a := e.Assistant
		want, _ := json.Marshal(reducedUpdateJSON{Type: e.Type, AssistantMessageEvent: deltaEventJSON{
			Type: a.Type.String(), ContentIndex: a.ContentIndex, Delta: a.Delta}})
		if got := e.AppendJSON(nil, true); string(got) != string(want) {
			t.Fatalf("reduced:\n got %s\nwant %s", got, want)
		}
		want, _ = json.Marshal(fullUpdateJSON{Type: e.Type, Message: pinative.AppendMessage(nil, a.Partial), AssistantMessageEvent: pinative.AppendEvent(nil, a)})
		if got := e.AppendJSON(nil, false); string(got) != string(want) {
			t.Fatalf("full:\n got %s\nwant %s", got, want)
		}
	}
}
