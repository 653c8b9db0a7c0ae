package google

import (
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// GenerateContentRequest.AppendJSON against json.Marshal of the same
// struct (mustJSON in request_test.go checks they agree) on the real
// workload: agentRequest, a ~300 KB, 300-message agent session. The
// decision these numbers back is in pkg/llm's doc
// (Hand-written JSON).
//
//	go test -run '^$' -bench 'EncodeRequestJSON' -count 6 ./pkg/llm/google/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkEncodeRequestJSON(b *testing.B) {
	body := mustBuild(b, agentRequest())
	raw := body.AppendJSON(nil)
	b.Run("impl=fast", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		stop := benchcpu.Start(b)
		for b.Loop() {
			raw = body.AppendJSON(raw[:0])
		}
		stop()
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		stop := benchcpu.Start(b)
		for b.Loop() {
			if _, err := json.Marshal(body); err != nil {
				b.Fatal(err)
			}
		}
		stop()
	})
}
