package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// The stream fast paths (chatFast.decode, respParser.fastDelta) against
// encoding/json on the real workload: every data line of the recorded
// streams in testdata (this package's and the conformance goldens), in
// order, one op = the whole set. /fast is what the parser does (fast path,
// encoding/json for the chunks it declines); /encoding_json is noFast.
// The decision these numbers back is in pkg/llm's doc (Hand-written JSON).
//
//	go test -run '^$' -bench 'ChatChunk|ResponsesEvent' -count 6 ./pkg/llm/openai/ > new.txt
//	benchstat -col /impl new.txt

// streamLines returns the data payloads of the SSE files matching the
// globs, [DONE] excluded.
func streamLines(tb testing.TB, globs ...string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			tb.Fatalf("no workload files for %s", g)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			for _, l := range bytes.Split(bytes.ReplaceAll(b, []byte("\r"), nil), []byte("\n")) {
				if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok && string(d) != "[DONE]" {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

func benchLines(b *testing.B, lines [][]byte, decode func([]byte)) {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	stop := benchcpu.Start(b)
	for b.Loop() {
		for _, l := range lines {
			decode(l)
		}
	}
	stop()
}

func BenchmarkChatChunk(b *testing.B) {
	lines := streamLines(b, "testdata/chat_*.sse", "../conformance/testdata/chat__*.stream.txt")
	var f chatFast
	var c chatChunk
	b.Run("impl=fast", func(b *testing.B) {
		benchLines(b, lines, func(l []byte) {
			if !f.decode(l, &c) {
				c = chatChunk{}
				_ = json.Unmarshal(l, &c) // malformed lines stay malformed on both sides
			}
		})
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		benchLines(b, lines, func(l []byte) {
			c = chatChunk{}
			_ = json.Unmarshal(l, &c)
		})
	})
}

// BenchmarkResponsesEvent runs the whole recorded streams (workload=goldens,
// mostly item and lifecycle events the fast path declines) and their
// *.delta events alone (workload=deltas: the steady state of a long
// stream, one event per token).
func BenchmarkResponsesEvent(b *testing.B) {
	all := streamLines(b, "testdata/responses_*.sse", "testdata/codex_*.sse", "../conformance/testdata/responses__*.stream.txt")
	var deltas [][]byte
	for _, l := range all {
		var e struct{ Type string }
		if json.Unmarshal(l, &e) == nil && strings.HasSuffix(e.Type, ".delta") {
			deltas = append(deltas, l)
		}
	}
	p := newRespParser(nil, "")
	var e respEvent
	for _, w := range []struct {
		name  string
		lines [][]byte
	}{{"goldens", all}, {"deltas", deltas}} {
		b.Run("workload="+w.name+"/impl=fast", func(b *testing.B) {
			benchLines(b, w.lines, func(l []byte) {
				if !p.fastDelta(l, &e) {
					e = respEvent{}
					_ = json.Unmarshal(l, &e)
				}
			})
		})
		b.Run("workload="+w.name+"/impl=encoding_json", func(b *testing.B) {
			benchLines(b, w.lines, func(l []byte) {
				e = respEvent{}
				_ = json.Unmarshal(l, &e)
			})
		})
	}
}

// BenchmarkResponsesStream parses each recorded Responses and Codex stream
// whole through the parser, builder included: the events the fast path
// declines (lifecycle, items) go to encoding/json, whose cost this
// includes.
func BenchmarkResponsesStream(b *testing.B) {
	var streams [][][]byte
	for _, path := range []string{"testdata/responses_reasoning_tools.sse", "testdata/codex_sparse.sse"} {
		streams = append(streams, streamLines(b, path))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, lines := range streams {
			bld := llm.NewBuilder(llm.APIOpenAIResponses, "openai", "gpt-5", func(llm.Event) bool { return true })
			p := newRespParser(bld, llm.APIOpenAIResponses)
			for _, l := range lines {
				if !p.handle(l) {
					break
				}
			}
		}
	}
}
