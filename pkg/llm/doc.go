// Package llm is the provider-neutral domain of the model layer: the
// canonical Request, Message and content blocks, the canonical event stream,
// Usage, StopReason, the Model catalog, the upstream
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
// The codecs read JSON with the module's internal/jsonr and write it with internal/jsonw
// instead of encoding/json. A hand-written path stays only while a
// side-by-side benchmark against encoding/json on the real workload shows it
// clearly cheaper (about 2x CPU, or a named allocation win on the per-chunk
// hot path), and, where the plain path is still there, a fuzz test checks
// that the two agree. The benchmarks are the *_json_bench_test.go files
// (sub-benchmarks /impl=fast and /impl=encoding_json); the figures and the
// command to re-run them are in docs/performance.md.
//
// Strings are scanned in plain Go, a 64-bit word at a time; jsonr's and
// jsonw's fuzz tests run those loops.
package llm
