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
			m := ev.Partial
			final = append([]llm.Content(nil), m.Content...)
			// The message metadata the fast path reads too (its strings
			// must outlive their events).
			trace = append(trace, fmt.Sprintf("message %q %q %+v %q %+v %q", m.ResponseID, m.Model, m.Usage, m.StopReason, m.Stop, m.ErrorMessage))
		}
		return true
	})
	for i, d := range deltas {
		trace = append(trace, fmt.Sprintf("kept delta %d %q", i, d))
	}
	return trace, final
}

// FuzzUpstreamFastMatchesSlow checks the event fast path against
// encoding/json decoding of every event.
func FuzzUpstreamFastMatchesSlow(f *testing.F) {
	addUpstreamSeeds(f)
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\n\",\"Text\":\"b\"}}\n\n"))
	// Keys that encoding/json folds to known ones across byte lengths
	// (U+017F folds to s, U+212A to k) must send the fast path to the slow one.
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_j\u017fon\":\"{\\\"a\\\":1}\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\",\"thin\u212aing\":\"hm\"}}\n\n"))
	// Every framing event the fast path takes, with the shapes it must
	// decline: nulls, a duplicate, a folded key in a nested object.
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":3,\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"sig0\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig1\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"xyz\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Read\",\"input\":{ \"a\" : 1 }}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"END\"},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"ID\":\"msg_2\",\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"input_tokens\":2}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\",\"Text\":\"ho\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null,\"stop_sequence\":null},\"usage\":{\"Output_tokens\":7}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"weird_reason\"},\"usage\":{\"output_tokens\":1.5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"usage\":{\"output_tokens\":9},\"message\":{\"id\":\"msg_3\",\"model\":\"m\",\"usage\":{\"input_tokens\":4}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":\"x\\ny\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		slowTrace, slowFinal := upstreamTrace(t, body, true)
		fastTrace, fastFinal := upstreamTrace(t, body, false)
		if !reflect.DeepEqual(slowTrace, fastTrace) || !reflect.DeepEqual(slowFinal, fastFinal) {
			t.Fatalf("fast path differs:\nslow %q\nfast %q", slowTrace, fastTrace)
		}
	})
}
