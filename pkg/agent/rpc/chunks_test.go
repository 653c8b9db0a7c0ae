package rpc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// readChunked reads the rpc_chunk frames of one chunked frame with next,
// checks each one's shape and returns the reassembled frame and its
// chunkId.
func readChunked(t *testing.T, next func() []byte) ([]byte, string) {
	t.Helper()
	var whole []byte
	var first Chunk
	for i := 0; ; i++ {
		line := next()
		if len(line) > MaxFrame {
			t.Fatalf("chunk %d is %d bytes", i, len(line))
		}
		var c Chunk
		if err := json.Unmarshal(line, &c); err != nil || c.Type != "rpc_chunk" {
			t.Fatalf("chunk %d: %.200s", i, line)
		}
		if i == 0 {
			first = c
		}
		if c.ChunkID != first.ChunkID || c.Index != i || c.Count != first.Count || c.ByteLength != first.ByteLength || c.Count < 2 {
			t.Fatalf("chunk %d: %+v after %+v", i, c, first)
		}
		part, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil || len(part) > ChunkPayload || i < c.Count-1 && len(part) != ChunkPayload {
			t.Fatalf("chunk %d payload: %d bytes, %v", i, len(part), err)
		}
		whole = append(whole, part...)
		if i == c.Count-1 {
			if len(whole) != c.ByteLength {
				t.Fatalf("reassembled %d bytes, declared %d", len(whole), c.ByteLength)
			}
			return whole, c.ChunkID
		}
	}
}

func TestWriterChunksUnderProtocol2(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.EnableChunks(map[string]string{"type": "ack"})
	id := "r1"
	big := strings.Repeat("x", MaxFrame)
	w.Value(OK(&id, "get_messages", map[string]string{"text": big}))
	w.Raw([]byte(`{"type":"small"}`))
	event := []byte(`{"type":"message_end","message":"` + big + `"}`)
	w.Raw(event)
	w.AgentEnd([]byte(`{"type":"agent_end","messages":["`+big+`"],"isTerminal":true,"yielded":true}`), 7, true, true)
	w.Value(OK(&id, "get_messages", map[string]string{"text": strings.Repeat("y", MaxReassembly)}))
	w.Close()
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	next := func() []byte {
		l := lines[0]
		lines = lines[1:]
		return l
	}
	if l := string(next()); l != "{\"type\":\"ack\"}\n" {
		t.Fatalf("first frame: %s", l)
	}
	got, chunkID := readChunked(t, next)
	want, _ := json.Marshal(OK(&id, "get_messages", map[string]string{"text": big}))
	if !bytes.Equal(got, want) || chunkID != "rpc-1" {
		t.Fatalf("reassembled %s frame differs", chunkID)
	}
	if l := string(next()); l != "{\"type\":\"small\"}\n" {
		t.Fatalf("after the chunks: %s", l)
	}
	if got, chunkID := readChunked(t, next); !bytes.Equal(got, event) || chunkID != "rpc-2" {
		t.Fatalf("reassembled %s event differs", chunkID)
	}
	if l := string(next()); l != `{"type":"agent_end","messages":[],"isTerminal":true,"yielded":true,"messageCount":7}`+"\n" {
		t.Fatalf("oversize agent_end: %.200s", l)
	}
	if l := string(next()); l != `{"id":"r1","type":"response","command":"get_messages","success":false,"error":"RPC response exceeded the transport limit"}`+"\n" {
		t.Fatalf("over the reassembly limit: %.200s", l)
	}
}

// TestRPCProtocol2 negotiates protocol 2 with a session holding a 2 MB
// tool result: before, get_messages is over the frame limit and fails;
// after, it arrives as rpc_chunk frames that reassemble to the whole
// response, and get_messages_page pages the same messages.
func TestRPCProtocol2(t *testing.T) {
	var ag *agent.Agent
	// Five 400 KB parts: the session keeps strings up to 500,000 characters.
	var huge []llm.Content
	for range 5 {
		huge = append(huge, llm.Text(strings.Repeat("0123456789", 40_000)))
	}
	p := startRPCInProcessWith(t, &llmtest.Provider{}, func(a *agent.Agent) {
		ag = a
		for _, m := range []*llm.Message{
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("read it")}},
			{Role: llm.RoleAssistant, StopReason: llm.StopToolUse, Content: []llm.Content{llm.ToolCall("t1", "read", json.RawMessage(`{"path":"big"}`))}},
			{Role: llm.RoleToolResult, ToolCallID: "t1", ToolName: "read", Content: huge},
			{Role: llm.RoleAssistant, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("done")}},
		} {
			if _, err := a.Session.AppendMessage(session.NewMessage(m, nil)); err != nil {
				t.Fatal(err)
			}
		}
	})
	line := func() []byte {
		l, err := p.out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ready := p.next("ready")
	if v, _ := json.Marshal(ready["supportedProtocolVersions"]); string(v) != "[1,2]" || ready["protocolVersion"] != 1.0 {
		t.Fatalf("ready = %v", ready)
	}
	p.send(`{"id":"v1","type":"get_messages"}`)
	if r := p.next("v1"); r["success"] != false || r["error"] != "RPC response exceeded the transport limit" {
		t.Fatalf("v1 get_messages = %.200v", r)
	}
	for _, c := range []struct{ version, want string }{
		{`,"protocolVersion":3`, "3"}, {`,"protocolVersion":"2"`, "2"}, {`,"protocolVersion":1`, "1"}, {"", "undefined"},
	} {
		p.send(`{"id":"n","type":"negotiate_protocol"` + c.version + `}`)
		if r := p.next("n"); r["success"] != false || r["command"] != "negotiate_protocol" || r["error"] != "Unsupported RPC protocol version: "+c.want {
			t.Fatalf("negotiate %q = %v", c.version, r)
		}
	}
	p.send(`{"id":"v1","type":"get_messages"}`)
	if r := p.next("v1"); r["success"] != false {
		t.Fatal("a failed negotiation switched to protocol 2")
	}
	p.send(`{"id":"n","type":"negotiate_protocol","protocolVersion":2}`)
	if l := string(line()); l != `{"id":"n","type":"response","command":"negotiate_protocol","success":true,"data":{"protocolVersion":2}}`+"\n" {
		t.Fatalf("negotiate 2 = %s", l)
	}

	id := "v2"
	msgs := ag.Messages()
	raws := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raws[i] = m.Raw
	}
	want, _ := json.Marshal(OK(&id, "get_messages", map[string]any{"messages": raws}))
	if len(msgs) != 4 || len(want) < 2_000_000 {
		t.Fatalf("%d messages, %d bytes", len(msgs), len(want))
	}
	p.send(`{"id":"v2","type":"get_messages"}`)
	got, chunkID := readChunked(t, line)
	if !bytes.Equal(got, want) || chunkID != "rpc-1" {
		t.Fatalf("reassembled %s: %d bytes, want %d", chunkID, len(got), len(want))
	}

	// Pages: the two small messages, the huge one alone (chunked), the last.
	var paged []json.RawMessage
	cursor := ""
	for i, wantChunked := range []bool{false, true, false} {
		p.send(`{"id":"p","type":"get_messages_page","limit":256` + cursor + `}`)
		l := line()
		if wantChunked {
			first := l
			l, chunkID = readChunked(t, func() []byte {
				if first == nil {
					return line()
				}
				l := first
				first = nil
				return l
			})
			if chunkID != "rpc-2" {
				t.Fatalf("page %d chunkId %s", i, chunkID)
			}
		}
		var r struct {
			Success bool
			Data    struct {
				Messages      []json.RawMessage
				NextCursor    string
				TotalMessages int
			}
		}
		if err := json.Unmarshal(l, &r); err != nil || !r.Success || r.Data.TotalMessages != 4 {
			t.Fatalf("page %d: %.300s", i, l)
		}
		paged = append(paged, r.Data.Messages...)
		if (r.Data.NextCursor == "") != (i == 2) {
			t.Fatalf("page %d cursor %q", i, r.Data.NextCursor)
		}
		cursor = `,"cursor":"` + r.Data.NextCursor + `"`
	}
	if len(paged) != 4 || !bytes.Equal(paged[2], raws[2]) {
		t.Fatalf("paged %d messages", len(paged))
	}

	for _, c := range []struct{ cmd, want string }{
		{`{"id":"e","type":"get_messages_page","cursor":"!"}`, "Invalid RPC message cursor"},
		{`{"id":"e","type":"get_messages_page","limit":0}`, "RPC message page limit must be between 1 and 256"},
		{`{"id":"e","type":"get_messages_page","limit":1.5}`, "RPC message page limit must be between 1 and 256"},
	} {
		p.send(c.cmd)
		if r := p.next("e"); r["success"] != false || r["error"] != c.want {
			t.Fatalf("%s = %v", c.cmd, r)
		}
	}
	// A cursor of another snapshot is stale.
	stale, _ := json.Marshal(pageCursor{Version: 1, SessionID: ag.SessionID(), MessageCount: 3, Offset: 1})
	p.send(`{"id":"e","type":"get_messages_page","cursor":"` + base64.RawURLEncoding.EncodeToString(stale) + `"}`)
	if r := p.next("e"); r["success"] != false || r["error"] != "RPC message cursor is stale" || r["code"] != "stale_cursor" {
		t.Fatalf("stale cursor = %v", r)
	}
	// Hosts do not chunk their commands: an rpc_chunk command is unknown.
	p.send(`{"type":"rpc_chunk","chunkId":"c","index":0,"count":2,"byteLength":1048576,"data":"eyJ0"}`)
	if r := p.next("response"); r["error"] != "Unknown command: rpc_chunk" || r["id"] != nil {
		t.Fatalf("rpc_chunk command = %v", r)
	}
	p.finish()
}
