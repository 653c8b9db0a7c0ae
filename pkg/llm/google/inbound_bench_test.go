package google

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// geminiConversation is a ~300 KB Gemini body of 300 alternating turns.
func geminiConversation() []byte {
	var b bytes.Buffer
	b.WriteString(`{"contents":[`)
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
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkDecodeRequest300KB decodes a 300-turn conversation, the
// gateway's large-request case.
func BenchmarkDecodeRequest300KB(b *testing.B) {
	body := geminiConversation()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
