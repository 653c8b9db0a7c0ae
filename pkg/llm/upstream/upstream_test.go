package upstream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// TestNewCoversEveryBundledWireAPI checks the chat models' wire APIs; the
// non-chat kinds reach their upstreams through the gateway's own routes.
func TestNewCoversEveryBundledWireAPI(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range llm.Builtin().Models() {
		if m.ModelKind() != llm.KindChat || seen[m.API] {
			continue
		}
		seen[m.API] = true
		p, err := New(m, Options{BaseURL: "http://127.0.0.1:1"})
		if err != nil || p == nil {
			t.Errorf("%s (api %s): %v", m.Key(), m.API, err)
		}
	}
	want := map[string]string{
		llm.APIAnthropic: "*anthropic.Provider", llm.APIOpenAIChat: "*openai.ChatProvider",
		llm.APIOpenAIResponses: "*openai.ResponsesProvider", llm.APICodex: "*openai.CodexProvider",
		llm.APIGoogle: "*google.Gemini", llm.APIGeminiCLI: "*google.CodeAssist",
	}
	for api, typ := range want {
		p, err := New(llm.Model{ID: "m", Provider: "p", API: api}, Options{})
		if err != nil || fmt.Sprintf("%T", p) != typ {
			t.Errorf("api %s: %T, %v; want %s", api, p, err, typ)
		}
	}
	if _, err := New(llm.Model{ID: "m", Provider: "p", API: "bedrock-converse-stream"}, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown api: %v, want ErrUnsupported", err)
	}
}
