package proxy

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/ompgo/omp/pkg/llm/openai"
)

func TestSessionID(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}]}`
	req, err := openai.DecodeChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	derived := sessionID(chatFormat, req, []byte(body), http.Header{})
	if !uuid.MatchString(derived) {
		t.Errorf("derived id %q is not UUID-shaped", derived)
	}
	if again := sessionID(chatFormat, req, []byte(body), http.Header{}); again != derived {
		t.Errorf("derived id not stable: %q then %q", derived, again)
	}
	other := `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"bye"}]}`
	if d := sessionID(chatFormat, req, []byte(other), http.Header{}); d == derived {
		t.Errorf("a different first message gave the same id")
	}
	for _, tc := range []struct {
		name, body string
		header     http.Header
		want       string
	}{
		{"body prompt_cache_key wins", `{"prompt_cache_key":"pck","metadata":{"session_id":"ms"}}`, http.Header{"Session_id": {"hs"}}, "pck"},
		{"metadata before headers", `{"metadata":{"conversation_id":"mc"}}`, http.Header{"X-Session-Id": {"hs"}}, "mc"},
		{"header order", `{}`, http.Header{"X-Session-Id": {"xs"}, "Conversation_id": {"cv"}}, "cv"},
		{"empty values skipped", `{"prompt_cache_key":""}`, http.Header{"X-Prompt-Cache-Key": {"xp"}}, "xp"},
	} {
		if got := sessionID(chatFormat, req, []byte(tc.body), tc.header); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
