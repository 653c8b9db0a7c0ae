package google

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// geminiConversation is a ~300 KB Gemini body of 300 alternating turns
// with a tool offered, the gateway's large-request case.
func geminiConversation() []byte {
	var b bytes.Buffer
	b.WriteString(`{"systemInstruction":{"parts":[{"text":"You are terse."}]},"contents":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "model"
		}
		fmt.Fprintf(&b, `{"role":%q,"parts":[{"text":%q}]}`, role, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 37)))
	}
	b.WriteString(`],"tools":[{"functionDeclarations":[{"name":"read","parametersJsonSchema":{"type":"object"}}]}],` +
		`"generationConfig":{"maxOutputTokens":4096,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1}}}`)
	return b.Bytes()
}

// The request reader's fast path (decodeInboundFast) against its fallback
// (decodeInboundPlain: snake_case keys renamed, then encoding/json) on a
// 300-turn conversation. The decision
// these numbers back is in pkg/llm's doc (Hand-written JSON).
//
//	go test -run '^$' -bench 'DecodeRequest300KB' -count 6 ./pkg/llm/google/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkDecodeRequest300KB(b *testing.B) {
	benchmarkDecodeRequest(b, geminiConversation())
}

// The same conversation with its keys in snake_case, as Google's curl
// examples spell them.
func BenchmarkDecodeRequest300KBSnakeCase(b *testing.B) {
	snake := strings.NewReplacer(`"systemInstruction"`, `"system_instruction"`,
		`"functionDeclarations"`, `"function_declarations"`, `"parametersJsonSchema"`, `"parameters_json_schema"`,
		`"generationConfig"`, `"generation_config"`, `"maxOutputTokens"`, `"max_output_tokens"`,
		`"thinkingConfig"`, `"thinking_config"`, `"includeThoughts"`, `"include_thoughts"`,
		`"thinkingBudget"`, `"thinking_budget"`)
	benchmarkDecodeRequest(b, []byte(snake.Replace(string(geminiConversation()))))
}

func benchmarkDecodeRequest(b *testing.B, body []byte) {
	run := func(b *testing.B, decode func() bool) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		stop := benchcpu.Start(b)
		for b.Loop() {
			if !decode() {
				b.Fatal("not decoded")
			}
		}
		stop()
	}
	b.Run("impl=fast", func(b *testing.B) {
		run(b, func() bool { var in inboundRequest; return decodeInboundFast(body, &in) })
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		run(b, func() bool { var in inboundRequest; return decodeInboundPlain(body, &in) == nil })
	})
}
