package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// DecodeRequest (one pass on jsonr, straight to the canonical request)
// against encoding/json on the real workload: agentRequest (~300 KB,
// 300-message agent session) and the inbound Claude Code golden.
//
// The package has no encoding/json decoder of requests to compare with, so
// impl=encoding_json is a lower bound of one: json.Unmarshal into a mirror
// of the wire types (content as string-or-blocks, schemas and inputs kept
// raw), without the conversion to llm.Request or any validation that
// DecodeRequest also does. The decision these numbers back is in pkg/llm's doc
// (Hand-written JSON).
//
//	go test -run '^$' -bench 'DecodeRequestJSON' -count 6 ./pkg/llm/anthropic/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkDecodeRequestJSON(b *testing.B) {
	golden, err := os.ReadFile("testdata/inbound_claude_code.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		body []byte
	}{{"agent300", agentRequest(b)}, {"golden", golden}} {
		b.Run("workload="+w.name+"/impl=fast", func(b *testing.B) {
			benchDecode(b, w.body, func(body []byte) error { _, err := DecodeRequest(body); return err })
		})
		b.Run("workload="+w.name+"/impl=encoding_json", func(b *testing.B) {
			benchDecode(b, w.body, func(body []byte) error { var r ejRequest; return json.Unmarshal(body, &r) })
		})
	}
}

func benchDecode(b *testing.B, body []byte, decode func([]byte) error) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		if err := decode(body); err != nil {
			b.Fatal(err)
		}
	}
	stop()
}

// ejRequest mirrors the Messages request for the encoding/json baseline.
type ejRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	System        ejContent       `json:"system"`
	Messages      []ejMessage     `json:"messages"`
	Tools         []ejTool        `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Thinking      json.RawMessage `json:"thinking"`
	Metadata      json.RawMessage `json:"metadata"`
	Temperature   *float64        `json:"temperature"`
	StopSequences []string        `json:"stop_sequences"`
}

type ejMessage struct {
	Role    string    `json:"role"`
	Content ejContent `json:"content"`
}

type ejTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type ejBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      ejContent       `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl json.RawMessage `json:"cache_control"`
	Source       *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// ejContent is a string or an array of blocks.
type ejContent []ejBlock

func (c *ejContent) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = ejContent{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(b, (*[]ejBlock)(c))
}
