package pinative

import (
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// The one-pass request decoder (decodeFast) against its encoding/json
// twin (decodeSlow) on the real workload: agentBody, a ~300 KB,
// 300-message agent session (the size a long pi session posts on every
// turn). The decision these numbers back is in pkg/llm's doc (Hand-written JSON).
//
//	go test -run '^$' -bench 'DecodeRequestJSON' -count 6 ./pkg/llm/pinative/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkDecodeRequestJSON(b *testing.B) {
	body := agentBody()
	for _, impl := range []struct {
		name   string
		decode func([]byte) (*Request, error)
	}{{"impl=fast", decodeFast}, {"impl=encoding_json", decodeSlow}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			stop := benchcpu.Start(b)
			for b.Loop() {
				if _, err := impl.decode(body); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
	}
}
