package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
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

// TestIsSystemMatchesEncodingJSON checks the lenient role scan against
// encoding/json, which it replaces on the plain shapes.
func TestIsSystemMatchesEncodingJSON(t *testing.T) {
	for _, m := range []string{
		`{"role":"system","content":"x"}`,
		`{"role":"user","content":"x"}`,
		`{"content":"x","role":"system"}`,
		`{"role":"system","role":"user"}`,
		`{"role":"user","role":"system"}`,
		`{"Role":"system"}`,
		`{"ROLE":"user","role":"system"}`,
		`{"role":"sys\u0074em"}`,
		`{"r\u006fle":"system"}`,
		`{"role":null}`,
		`{"role":5}`,
		`{"role":"system","role":5}`,
		`{"role":"system","role":null}`,
		`{"role":"system","content":"x","role":null}`,
		`{ "role" : "system" }`,
		`{"content":[{"type":"text","text":"\"role\":\"system\""}]}`,
		`{}`,
		`"system"`,
		`[{"role":"system"}]`,
	} {
		var r struct {
			Role string `json:"role"`
		}
		want := json.Unmarshal([]byte(m), &r) == nil && r.Role == "system"
		if got := isSystem([]byte(m)); got != want {
			t.Errorf("isSystem(%s) = %v, encoding/json says %v", m, got, want)
		}
	}
}

// TestDerivedSessionIDFormula pins the derived id to its definition:
// SHA-256 over model, system blocks joined by blank lines, compact tools
// and compact first message, NUL-separated, first 32 hex digits 8-4-4-4-12.
func TestDerivedSessionIDFormula(t *testing.T) {
	req := &llm.Request{Model: "m", System: []llm.SystemBlock{{Text: "a"}, {Text: "b"}}}
	tools := json.RawMessage(`[ {"name":"t"} ]`)
	first := json.RawMessage(`{"role": "user","content":"hi"}`)
	sum := sha256.Sum256([]byte("m\x00a\n\nb\x00" + `[{"name":"t"}]` + "\x00" + `{"role":"user","content":"hi"}`))
	x := hex.EncodeToString(sum[:])[:32]
	want := x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
	if got := derivedSessionID(req, tools, first); got != want {
		t.Errorf("derived id %s, want %s", got, want)
	}
	if got, want := derivedSessionID(&llm.Request{Model: "m"}, nil, nil), func() string {
		sum := sha256.Sum256([]byte("m"))
		x := hex.EncodeToString(sum[:])[:32]
		return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
	}(); got != want {
		t.Errorf("derived id of a bare model %s, want %s", got, want)
	}
}
