package rpc

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriterLimits(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := strings.Repeat("x", MaxFrame)
	id := "r1"
	w.Value(OK(&id, "get_messages", map[string]string{"text": big}))
	w.AgentEnd([]byte(`{"type":"agent_end","messages":["`+big+`"],"isTerminal":false,"yielded":true}`), 7, false, true)
	w.Raw([]byte(`{"type":"message_end","message":"` + big + `"}`))
	w.Value(map[string]any{"type": "small"})
	w.Close()
	want := `{"id":"r1","type":"response","command":"get_messages","success":false,"error":"RPC response exceeded the transport limit"}
{"type":"agent_end","messages":[],"isTerminal":false,"yielded":true,"messageCount":7}
{"error":"RPC frame exceeded the transport limit","originalType":"message_end","type":"rpc_frame_error"}
{"type":"small"}
`
	if buf.String() != want {
		t.Fatalf("frames:\n%s", buf.String())
	}
}
