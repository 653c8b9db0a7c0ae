package conformance

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// indentJSON pretty-prints a JSON body without reordering keys or
// touching string escapes.
func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// TestGoldens runs every (inbound × upstream × scenario) exchange in both
// modes, checks the strictness rules and compares with the goldens:
// <inbound>__<upstream>__<scenario>.upstream.json (the normalized upstream
// request), .stream.txt (the exact SSE text) and .json (the non-streaming
// body).
func TestGoldens(t *testing.T) {
	for _, in := range inbounds {
		for _, up := range upstreams {
			for _, sc := range scenarios {
				name := in.name + "__" + up.name + "__" + sc.name
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					streamed := exchange(t, in, up, []byte(sc.body(in.name, up.model.ID, true)), okReply(up, sc.reply))
					whole := exchange(t, in, up, []byte(sc.body(in.name, up.model.ID, false)), okReply(up, sc.reply))
					if streamed.status != 200 || whole.status != 200 {
						t.Fatalf("status stream=%d (%s) json=%d (%s)", streamed.status, streamed.body, whole.status, whole.body)
					}
					checkStream(t, in.name, streamed.body, true)
					checkJSONBody(t, in.name, whole.body)
					checkShape(t, in.name, up, sc.reply, whole.body)
					checkParity(t, in.name, streamed.body, whole.body)
					checkUpstreamRequest(t, up, in.name, streamed.up)
					upStream, upWhole := normalizeUpstream(t, streamed.up), normalizeUpstream(t, whole.up)
					// The providers always stream from upstream: a
					// non-streaming client changes nothing there.
					if !bytes.Equal(upStream, upWhole) {
						t.Errorf("upstream request depends on the inbound stream flag:\n%s\n---\n%s", upStream, upWhole)
					}
					llmtest.GoldenExact(t, name+".upstream.json", upStream)
					llmtest.GoldenExact(t, name+".stream.txt", streamed.body)
					llmtest.GoldenExact(t, name+".json", indentJSON(t, whole.body))
				})
			}
		}
	}
}
