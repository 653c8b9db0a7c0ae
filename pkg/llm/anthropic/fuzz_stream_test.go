package anthropic

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// FuzzUpstreamStream feeds arbitrary SSE bodies to the Messages stream
// parser: it must never panic, must keep the canonical event grammar (one
// start, balanced blocks, exactly one terminal event, last), and every
// event must re-encode as an Anthropic frame carrying valid JSON.
func FuzzUpstreamStream(f *testing.F) {
	addUpstreamSeeds(f)
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := &streamState{p: &Provider{}, ctx: t.Context(), body: io.NopCloser(nil), rd: newReader(string(body))}
		enc := NewStreamEncoder("claude-x", "msg_1")
		var events []llm.Event
		var frame []byte
		s.run(func(ev llm.Event) bool {
			frame = enc.Encode(frame[:0], &ev)
			checkFrames(t, frame)
			if ev.Type.IsTerminal() && ev.Partial != nil {
				m := *ev.Partial
				ev.Partial = &m
			}
			events = append(events, ev)
			return true
		})
		if err := llmtest.CheckGrammar(events); err != nil {
			t.Fatalf("grammar: %v (%d events)", err, len(events))
		}
	})
}

// checkFrames verifies that every SSE frame in b has an event line and a
// JSON data line.
func checkFrames(t *testing.T, b []byte) {
	t.Helper()
	for len(b) > 0 {
		end := indexBlank(b)
		if end < 0 {
			t.Fatalf("frame without a blank line: %q", b)
		}
		frame := b[:end]
		b = b[end+2:]
		var ev, data []byte
		for _, line := range splitLines(frame) {
			switch {
			case hasPrefix(line, "event: "):
				ev = line[7:]
			case hasPrefix(line, "data: "):
				data = line[6:]
			}
		}
		if len(ev) == 0 {
			t.Fatalf("frame without event: %q", frame)
		}
		if !json.Valid(data) {
			t.Fatalf("frame data is not JSON: %q", frame)
		}
	}
}

func indexBlank(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\n' && b[i+1] == '\n' {
			return i
		}
	}
	return -1
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// addUpstreamSeeds seeds a fuzz target with every recorded upstream stream.
func addUpstreamSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "upstream_*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}
