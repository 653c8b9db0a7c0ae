package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// seqIDs returns an id generator yielding call_1, call_2, …
func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("call_%d", n) }
}

// transcript runs an SSE body through the decoder and renders the events
// and the final message as stable text.
func transcript(t *testing.T, body []byte, codeAssist bool, names *GenerateContentRequest) string {
	t.Helper()
	var out strings.Builder
	var final *llm.Message
	yield := func(ev llm.Event) bool {
		fmt.Fprintf(&out, "%s", ev.Type)
		switch {
		case ev.Type.IsDelta():
			fmt.Fprintf(&out, " %d %q", ev.ContentIndex, ev.Delta)
		case ev.Type == llm.EventTextEnd || ev.Type == llm.EventThinkingEnd:
			fmt.Fprintf(&out, " %d %q", ev.ContentIndex, ev.Content)
		case ev.Type == llm.EventToolCallEnd:
			c := ev.Block()
			fmt.Fprintf(&out, " %d id=%s name=%s args=%s", ev.ContentIndex, c.ID, c.Name, c.Arguments)
		case ev.Type == llm.EventTextStart || ev.Type == llm.EventThinkingStart || ev.Type == llm.EventToolCallStart:
			fmt.Fprintf(&out, " %d", ev.ContentIndex)
		case ev.Type.IsTerminal():
			fmt.Fprintf(&out, " %s", ev.Reason)
			m := *ev.Partial
			final = &m
		}
		out.WriteByte('\n')
		return true
	}
	b := llm.NewBuilder(llm.APIGoogle, "google", "gemini-test", yield)
	b.Start()
	d := NewDecoder(b, DecoderOptions{CodeAssist: codeAssist, Request: names, NewID: seqIDs(),
		Price: llm.Price{Input: 1, Output: 2, CacheRead: 0.5}})
	d.consume(context.Background(), bytes.NewReader(body))
	if final == nil {
		t.Fatal("no terminal event")
	}
	sum := struct {
		Content    []llm.Content
		Usage      llm.Usage
		StopReason llm.StopReason
		Stop       llm.StopDetail
		ResponseID string
		Error      string `json:",omitempty"`
		Status     int    `json:",omitempty"`
	}{final.Content, final.Usage, final.StopReason, final.Stop, final.ResponseID, final.ErrorMessage, final.ErrorStatus}
	js, _ := json.MarshalIndent(sum, "", "  ")
	out.Write(js)
	out.WriteByte('\n')
	return out.String()
}

func TestDecoderGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sse")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := transcript(t, body, strings.HasPrefix(name, "codeassist"), nil)
			golden := strings.TrimSuffix(f, ".sse") + ".golden"
			llmtest.GoldenExact(t, golden, []byte(got))
		})
	}
}

func TestMapFinishReason(t *testing.T) {
	tests := []struct {
		raw    string
		tool   bool
		want   llm.StopReason
		safety bool
	}{
		{"STOP", false, llm.StopEnd, false},
		{"STOP", true, llm.StopToolUse, false},
		{"MAX_TOKENS", false, llm.StopLength, false},
		{"MAX_TOKENS", true, llm.StopToolUse, false},
		{"SAFETY", false, llm.StopError, true},
		{"SAFETY", true, llm.StopError, true},
		{"RECITATION", false, llm.StopError, true},
		{"BLOCKLIST", false, llm.StopError, true},
		{"PROHIBITED_CONTENT", false, llm.StopError, true},
		{"SPII", false, llm.StopError, true},
		{"IMAGE_SAFETY", false, llm.StopError, true},
		{"MALFORMED_FUNCTION_CALL", true, llm.StopError, false},
		{"UNEXPECTED_TOOL_CALL", false, llm.StopError, false},
		{"LANGUAGE", false, llm.StopError, false},
		{"OTHER", false, llm.StopError, false},
		{"FINISH_REASON_UNSPECIFIED", false, llm.StopError, false},
		{"SOMETHING_NEW", false, llm.StopError, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_tool=%v", tt.raw, tt.tool), func(t *testing.T) {
			got, safety := MapFinishReason(tt.raw, tt.tool)
			if got != tt.want || safety != tt.safety {
				t.Errorf("MapFinishReason(%q,%v) = %s,%v; want %s,%v", tt.raw, tt.tool, got, safety, tt.want, tt.safety)
			}
		})
	}
}

func TestDecoderMapsRewrittenToolNamesBack(t *testing.T) {
	req := &llm.Request{Tools: []llm.Tool{{Name: "fs.read"}}, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}}}}
	body, err := BuildRequest(req, llm.Model{ID: "gemini-2.5-flash", Provider: "google"}, Target{})
	if err != nil {
		t.Fatal(err)
	}
	wire := body.ToolName("fs.read")
	if wire != "fs.read" {
		t.Fatalf("ToolName of an unknown wire name should be identity, got %q", wire)
	}
	var decl struct {
		FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
	}
	_ = json.Unmarshal(body.Tools[0], &decl)
	w := decl.FunctionDeclarations[0].Name
	if w != "fs_read" {
		t.Fatalf("wire name = %q, want fs_read", w)
	}
	sse := `data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"fs_read","args":{}}}]},"finishReason":"STOP"}]}` + "\n\n"
	got := transcript(t, []byte(sse), false, body)
	if !strings.Contains(got, "name=fs.read") {
		t.Errorf("tool name not mapped back:\n%s", got)
	}
}

func TestDecoderStopsWhenConsumerStops(t *testing.T) {
	body, _ := os.ReadFile("testdata/text_thinking.sse")
	n := 0
	b := llm.NewBuilder(llm.APIGoogle, "google", "m", func(llm.Event) bool { n++; return n < 3 })
	b.Start()
	NewDecoder(b, DecoderOptions{}).consume(context.Background(), bytes.NewReader(body))
	if n != 3 {
		t.Errorf("consumer saw %d events after stopping at 3", n)
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestDecoderReadFailureIsErrorOrAborted(t *testing.T) {
	chunk := []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}\n\n")
	for _, tt := range []struct {
		name   string
		cancel bool
		want   llm.StopReason
	}{{"transport_error", false, llm.StopError}, {"cancelled", true, llm.StopAborted}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			var last llm.Event
			b := llm.NewBuilder(llm.APIGoogle, "google", "m", func(ev llm.Event) bool { last = ev; return true })
			b.Start()
			NewDecoder(b, DecoderOptions{}).consume(ctx, &failingReader{data: chunk, err: io.ErrUnexpectedEOF})
			if last.Type != llm.EventError || last.Reason != tt.want {
				t.Fatalf("last event %s %s, want error %s", last.Type, last.Reason, tt.want)
			}
			if tt.cancel && !errors.Is(last.Err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", last.Err)
			}
		})
	}
}

func FuzzDecoderChunk(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: ")); ok {
				f.Add(d, false)
				f.Add(d, true)
			}
		}
	}
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":[1]}}]}}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, ca bool) {
		terminal := 0
		b := llm.NewBuilder(llm.APIGoogle, "google", "m", func(ev llm.Event) bool {
			if ev.Type.IsTerminal() {
				terminal++
			}
			return true
		})
		b.Start()
		d := NewDecoder(b, DecoderOptions{CodeAssist: ca, NewID: seqIDs()})
		//lint:ignore SA4000 the same chunk twice on purpose: a repeated chunk must keep the grammar
		if d.Chunk(data) && d.Chunk(data) {
			d.End()
		}
		if terminal != 1 {
			t.Fatalf("%d terminal events", terminal)
		}
		for _, c := range b.Message().Content {
			if c.Type == llm.ContentToolCall && !json.Valid(c.Arguments) {
				t.Fatalf("invalid arguments %q", c.Arguments)
			}
		}
	})
}

// FuzzParseResponseMatchesJSON checks the hand-written chunk reader
// against encoding/json on every valid chunk.
func FuzzParseResponseMatchesJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: ")); ok {
				f.Add(d, strings.Contains(p, "codeassist"))
			}
		}
	}
	// Keys that encoding/json folds to known ones across byte lengths (U+017F folds to s).
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finiſhReaſon":"MAX_TOKENS"}],"uſageMetadata":{"promptTokenCount":3}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, ca bool) {
		if !json.Valid(data) {
			return
		}
		var r response
		got, gotErr, err := parseResponse(data, ca, &r)
		var want *response
		var wantErr *apiError
		if ca {
			var c codeAssistChunk
			if json.Unmarshal(data, &c) != nil {
				return
			}
			want, wantErr = c.Response, c.Error
		} else {
			var c response
			if json.Unmarshal(data, &c) != nil {
				return
			}
			want, wantErr = &c, c.Error
		}
		if err != nil {
			t.Fatalf("fast reader failed where encoding/json succeeded: %v", err)
		}
		norm := func(r *response) string {
			if r == nil {
				return "nil"
			}
			c := *r
			c.Error = nil
			if len(c.Candidates) == 0 {
				c.Candidates = nil
			}
			cands := make([]candidate, len(c.Candidates))
			for i, cd := range c.Candidates {
				if cd.Content != nil && len(cd.Content.Parts) == 0 {
					cc := *cd.Content
					cc.Parts = nil // nil and empty parts mean the same
					cd.Content = &cc
				}
				cands[i] = cd
			}
			c.Candidates = cands
			b, _ := json.Marshal(c)
			return string(b)
		}
		if norm(got) != norm(want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("disagree on %s\nfast %s\njson %s", data, norm(got), norm(want))
		}
	})
}
