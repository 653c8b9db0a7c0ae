package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// The upstream delta fast path (streamState.fastEvent) against
// encoding/json on the real workload: every data line of the recorded
// Messages streams (this package's upstream_*.sse and the conformance
// messages__*.stream.txt goldens), one op = the whole set. /fast is what
// streamState.next does (fast path, encoding/json for the events it
// declines); /encoding_json is noFast. The decision these numbers back is
// in pkg/llm's doc
// (Hand-written JSON).
//
//	go test -run '^$' -bench 'UpstreamEvent' -count 6 ./pkg/llm/anthropic/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkUpstreamEvent(b *testing.B) {
	var lines [][]byte
	for _, g := range []string{"testdata/upstream_*.sse", "../conformance/testdata/messages__*.stream.txt"} {
		files, _ := filepath.Glob(g)
		if len(files) == 0 {
			b.Fatalf("no workload files for %s", g)
		}
		for _, name := range files {
			raw, err := os.ReadFile(name)
			if err != nil {
				b.Fatal(err)
			}
			for _, l := range bytes.Split(raw, []byte("\n")) {
				if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
					lines = append(lines, d)
				}
			}
		}
	}
	run := func(b *testing.B, lines [][]byte, decode func([]byte)) {
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
	// workload=deltas keeps the content_block_delta events alone: the
	// steady state of a long stream, one event per token.
	var deltas [][]byte
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"type":"content_block_delta"`)) {
			deltas = append(deltas, l)
		}
	}
	var s streamState
	var sink *wireEvent
	for _, w := range []struct {
		name  string
		lines [][]byte
	}{{"goldens", lines}, {"deltas", deltas}} {
		b.Run("workload="+w.name+"/impl=fast", func(b *testing.B) {
			run(b, w.lines, func(l []byte) {
				we, ok := s.fastEvent(l)
				if !ok {
					we = new(wireEvent)
					_ = json.Unmarshal(l, we)
				}
				sink = we
			})
		})
		b.Run("workload="+w.name+"/impl=encoding_json", func(b *testing.B) {
			run(b, w.lines, func(l []byte) {
				we := new(wireEvent)
				_ = json.Unmarshal(l, we)
				sink = we
			})
		})
	}
	_ = sink
}
