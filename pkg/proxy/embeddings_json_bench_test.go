package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// embeddingsAnswerJSON is the encoding/json mirror of what appendEmbeddings
// writes.
type embeddingsAnswerJSON struct {
	Object string            `json:"object"`
	Data   []json.RawMessage `json:"data"`
	Model  string            `json:"model"`
	Usage  struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// benchEmbeddingsAnswer is a decoded upstream answer of n 1536-float
// vectors (text-embedding-3-small's size).
func benchEmbeddingsAnswer(tb testing.TB, n int) *embeddingsAnswer {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":[`, k)
		for i := range 1536 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%.8f", float64((i+k)%97)/97-0.5)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	var ans embeddingsAnswer
	if err := json.Unmarshal(b.Bytes(), &ans); err != nil {
		tb.Fatal(err)
	}
	return &ans
}

// BenchmarkEmbeddingsAnswer writes the gateway's embeddings answer of 1
// and 16 vectors: appendEmbeddings (impl=fast) against json.Marshal of the
// equivalent struct (impl=encoding_json), which scans the vectors again.
func BenchmarkEmbeddingsAnswer(b *testing.B) {
	for _, n := range []int{1, 16} {
		ans := benchEmbeddingsAnswer(b, n)
		b.Run(fmt.Sprintf("vectors=%d/impl=fast", n), func(b *testing.B) {
			defer benchcpu.Start(b)()
			b.ReportAllocs()
			for b.Loop() {
				appendEmbeddings(nil, ans, "openai/text-embedding-3-small")
			}
		})
		b.Run(fmt.Sprintf("vectors=%d/impl=encoding_json", n), func(b *testing.B) {
			defer benchcpu.Start(b)()
			b.ReportAllocs()
			for b.Loop() {
				v := embeddingsAnswerJSON{Object: "list", Data: ans.Data, Model: "openai/text-embedding-3-small"}
				v.Usage.PromptTokens, v.Usage.TotalTokens = ans.Usage.PromptTokens, ans.Usage.TotalTokens
				if _, err := json.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEmbeddingsAnswerMirror: the benchmark's two sides write the same
// bytes.
func TestEmbeddingsAnswerMirror(t *testing.T) {
	ans := benchEmbeddingsAnswer(t, 2)
	v := embeddingsAnswerJSON{Object: "list", Data: ans.Data, Model: "m<1>"}
	v.Usage.PromptTokens, v.Usage.TotalTokens = ans.Usage.PromptTokens, ans.Usage.TotalTokens
	want, _ := json.Marshal(v)
	if got := appendEmbeddings(nil, ans, "m<1>"); !bytes.Equal(got, want) {
		t.Fatalf("appendEmbeddings differs from json.Marshal:\n%.300s\n%.300s", got, want)
	}
}
