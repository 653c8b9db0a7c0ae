package google

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// The one-pass chunk reader (parseResponse) against encoding/json (its
// own fallback) on the real workload: every data line of the recorded
// streams in testdata (codeassist.sse in the Code Assist envelope), one op
// = the whole set. The decision these numbers back is in pkg/llm's doc
// (Hand-written JSON).
//
//	go test -run '^$' -bench 'StreamChunk' -count 6 ./pkg/llm/google/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkStreamChunk(b *testing.B) {
	type line struct {
		data       []byte
		codeAssist bool
	}
	var lines []line
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) == 0 {
		b.Fatal("no workload files")
	}
	n := 0
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range bytes.Split(raw, []byte("\n")) {
			if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok && string(d) != "[DONE]" {
				lines = append(lines, line{d, strings.Contains(name, "codeassist")})
				n += len(d)
			}
		}
	}
	run := func(b *testing.B, decode func([]byte, bool)) {
		b.SetBytes(int64(n))
		b.ReportAllocs()
		stop := benchcpu.Start(b)
		for b.Loop() {
			for _, l := range lines {
				decode(l.data, l.codeAssist)
			}
		}
		stop()
	}
	var r response
	var sink *response
	b.Run("impl=fast", func(b *testing.B) {
		run(b, func(data []byte, ca bool) { sink, _, _ = parseResponse(data, ca, &r) })
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		run(b, func(data []byte, ca bool) {
			r = response{}
			if ca {
				var c codeAssistChunk
				_ = json.Unmarshal(data, &c)
				sink = c.Response
				return
			}
			_ = json.Unmarshal(data, &r)
			sink = &r
		})
	})
	_ = sink
}
