package anthropic

import (
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// upstreamTrace runs an SSE body through the stream parser and records the
// events (their deltas kept as they are: they must stay valid) and the
// final content.
func upstreamTrace(t *testing.T, body []byte, noFast bool) ([]string, []llm.Content) {
	s := &streamState{p: &Provider{}, ctx: t.Context(), body: io.NopCloser(nil), rd: newReader(string(body)), noFast: noFast}
	var trace, deltas []string
	var final []llm.Content
	s.run(func(ev llm.Event) bool {
		deltas = append(deltas, ev.Delta)
		msg := ""
		if ev.Err != nil {
			msg = ev.Err.Error()
		}
		trace = append(trace, fmt.Sprintf("%s %d %q %q %s %s", ev.Type, ev.ContentIndex, ev.Delta, ev.Content, ev.Reason, msg))
		if ev.Type.IsTerminal() && ev.Partial != nil {
			final = append([]llm.Content(nil), ev.Partial.Content...)
		}
		return true
	})
	for i, d := range deltas {
		trace = append(trace, fmt.Sprintf("kept delta %d %q", i, d))
	}
	return trace, final
}

// FuzzUpstreamFastMatchesSlow checks the delta fast path against
// encoding/json decoding of every event.
func FuzzUpstreamFastMatchesSlow(f *testing.F) {
	addUpstreamSeeds(f)
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\n\",\"Text\":\"b\"}}\n\n"))
	// Keys that encoding/json folds to known ones across byte lengths
	// (U+017F folds to s, U+212A to k) must send the fast path to the slow one.
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_j\u017fon\":\"{\\\"a\\\":1}\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\",\"thin\u212aing\":\"hm\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		slowTrace, slowFinal := upstreamTrace(t, body, true)
		fastTrace, fastFinal := upstreamTrace(t, body, false)
		if !reflect.DeepEqual(slowTrace, fastTrace) || !reflect.DeepEqual(slowFinal, fastFinal) {
			t.Fatalf("fast path differs:\nslow %q\nfast %q", slowTrace, fastTrace)
		}
	})
}
