// Package llm is the provider-neutral domain of the model layer: the
// canonical Request, Message and content blocks, the canonical event stream
// (wire-formats.md §1), Usage, StopReason, the Model catalog, the upstream
// error vocabulary and the Provider interface.
//
// Adapters (pkg/llm/anthropic, pkg/llm/openai, pkg/llm/google) translate
// between these types and a provider's wire format, in both directions:
// as an upstream Provider and as an inbound codec for the gateway.
//
// The package imports only the standard library and never net/http.
//
// # Hand-written JSON
//
// The codecs read JSON with internal/jsonr and write it with internal/jsonw
// instead of encoding/json. Each hand-written path keeps its place only
// with a side-by-side benchmark against encoding/json on the real workload
// (the recorded streams in */testdata and conformance/testdata, the
// request goldens, and a ~300 KB, 300-message agent session: what a long
// session posts on every turn), and, where the plain path is still there,
// a fuzz test that the two agree. Bar: 2x CPU time, or a named allocation
// win on the per-chunk hot path. Measured on the shared 2-core machine
// (cpu-ns/op of tools/benchcpu; wall time there mostly measures waiting
// for a core), benchstat of -count 6:
//
//	path                            workload                    CPU x  allocs/op fast vs json  decision
//	openai chatFast (chat chunk)    chat goldens, 130 chunks    3.9    173 vs 1716 (9.9x)      kept
//	openai respParser.fastDelta     responses goldens           1.05   1982 vs 2403            kept: deltas
//	                                *.delta events only         6.3    0 vs 421
//	anthropic streamState.fastEvent messages goldens            6.7    174 vs 2378 (13.7x)     kept
//	                                content_block_delta only    10.7   11 vs 887
//	google parseResponse (chunk)    google testdata streams     3.6    66 vs 249               kept
//	pinative decodeFast (request)   agent session               15.7   138 vs 6983             kept
//	anthropic DecodeRequest         agent session / golden      9.2 / 3.2   15 vs 5894         kept
//	openai DecodeChatRequest        agent session / golden      4.1 / 1.4   36 vs 2476         kept
//	openai DecodeResponsesRequest   agent session / golden      3.2 / 1.6   54 vs 3131         kept
//	google AppendJSON (request)     agent session               9.5    0 vs 1                  kept
//
// The openai Responses fast path only takes the hot event shape and hands
// everything else to encoding/json, so on the short goldens (mostly start,
// item and stop events) it breaks even; it is kept for the steady state of
// a long stream, one delta event per token, where it is 6x faster and
// allocates nothing. The anthropic one also takes every framing event of
// an ordinary stream (message_start, content_block_start, message_delta):
// a short reply is mostly framing, and encoding/json on those events was
// about a quarter of the gateway's CPU for a small chat→anthropic request
// (re-measured for it: the fastEvent row, one -count 6 run, medians). The three request decoders have no
// encoding/json twin to compare with: their baseline is json.Unmarshal into
// a mirror of the wire types without the conversion to the canonical
// request, a lower bound of what an encoding/json decoder would cost.
//
// Benchmarks (each with /impl=fast and /impl=encoding_json sub-benchmarks,
// in the *_json_bench_test.go files): openai BenchmarkChatChunk,
// BenchmarkResponsesEvent, BenchmarkDecodeChatRequestJSON,
// BenchmarkDecodeResponsesRequestJSON; anthropic BenchmarkUpstreamEvent,
// BenchmarkDecodeRequestJSON; google BenchmarkStreamChunk,
// BenchmarkEncodeRequestJSON; pinative BenchmarkDecodeRequestJSON.
// Agreement: FuzzChatChunkFastMatchesSlow, FuzzResponsesDeltaFastMatchesSlow,
// FuzzUpstreamFastMatchesSlow, FuzzParseResponseMatchesJSON,
// FuzzDecodeFastMatchesSlow, mustJSON (google request tests). Re-run:
//
//	go test -run '^$' -bench 'ChatChunk|ResponsesEvent|UpstreamEvent|StreamChunk|RequestJSON' \
//	    -count 6 ./pkg/llm/... > new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl new.txt
//
// Not yet benchmarked against encoding/json: the jsonw encoders of
// outbound request bodies and inbound SSE frames (anthropic, openai,
// pinative), which have no encoding/json twin.
//
// Strings are scanned in plain Go, a 64-bit word at a time; jsonr's and
// jsonw's fuzz tests run those loops.
package llm
