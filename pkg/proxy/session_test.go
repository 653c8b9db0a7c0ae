package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
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
		{"blank values skipped", `{"prompt_cache_key":" \t","metadata":{"session_id":" "}}`, http.Header{"Session_id": {"  "}, "X-Session-Id": {"xs"}}, "xs"},
	} {
		if got := sessionID(chatFormat, req, []byte(tc.body), tc.header); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBlankSessionKeyIsAbsent: an empty or blank prompt_cache_key, or
// pi-native options.sessionId, gives the id derived from the conversation,
// as if the client had sent no key.
func TestBlankSessionKeyIsAbsent(t *testing.T) {
	for _, tc := range []struct {
		f         *format
		tmpl      string // %s is where the key member goes
		keyMember string
	}{
		{chatFormat, `{"model":"m",%s"messages":[{"role":"user","content":"hi"}]}`, `"prompt_cache_key":%q,`},
		{responsesFormat, `{"model":"m",%s"input":"hi"}`, `"prompt_cache_key":%q,`},
		{piFormat, `{"model":"m","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]},"options":{%s"maxTokens":5}}`, `"sessionId":%q,`},
	} {
		id := func(member string) string {
			t.Helper()
			body := []byte(fmt.Sprintf(tc.tmpl, member))
			req, err := tc.f.decode(body)
			if err != nil {
				t.Fatalf("%s: decode %s: %v", tc.f.name, body, err)
			}
			return sessionID(tc.f, req, body, http.Header{})
		}
		absent := id("")
		for _, key := range []string{"", " ", "\t\n "} {
			if got := id(fmt.Sprintf(tc.keyMember, key)); got != absent {
				t.Errorf("%s: key %q gave session %q, want %q (as without a key)", tc.f.name, key, got, absent)
			}
		}
		if got := id(fmt.Sprintf(tc.keyMember, "k-1")); got != "k-1" {
			t.Errorf("%s: key k-1 gave session %q", tc.f.name, got)
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

// TestWriteCompactMatchesEncodingJSON checks the copy-free compaction
// the derived id hashes against json.Compact.
func TestWriteCompactMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{ "role" : "user" ,	"content" : "a b \" c" }`,
		"[\n {\"a\": [1, 2 ,3]},\r\n \"x y\"\t]",
		`{"content":"\\","k":"\\\" ]} "}`,
		`"  "`,
		`  null  `,
	} {
		var want, got bytes.Buffer
		if err := json.Compact(&want, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		writeCompact(&got, []byte(raw))
		if got.String() != want.String() {
			t.Errorf("writeCompact(%q) = %q, want %q", raw, got.String(), want.String())
		}
	}
	// A string the scan cannot follow goes to json.Compact, which keeps
	// what it cannot compact.
	var got bytes.Buffer
	writeCompact(&got, []byte(`{"a": "open`))
	if got.String() != `{"a": "open` {
		t.Errorf("unterminated string gave %q", got.String())
	}
}

func FuzzWriteCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, "b c"]}`, `[ "\"", {} ]`, ` 1 `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want, got bytes.Buffer
		if json.Compact(&want, []byte(raw)) != nil {
			return // the derived id only hashes values a decoder accepted
		}
		writeCompact(&got, []byte(raw))
		if got.String() != want.String() {
			t.Fatalf("writeCompact(%q) = %q, want %q", raw, got.String(), want.String())
		}
	})
}

// TestDerivedSessionIDOfALongConversation pins the id of a 300-message
// body to its formula: the long tail of the conversation changes nothing,
// the first non-system message does.
func TestDerivedSessionIDOfALongConversation(t *testing.T) {
	body := bigSessionBody()
	req, err := openai.DecodeChatRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf(`{"role":"user","content":%q}`, "message 0: "+strings.Repeat("lorem ipsum dolor sit amet ", 37))
	sum := sha256.Sum256([]byte("anthropic/claude-sonnet-4-5\x00be brief\x00" + first))
	x := hex.EncodeToString(sum[:])[:32]
	want := x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
	if got := sessionID(chatFormat, req, body, http.Header{}); got != want {
		t.Errorf("derived id %s, want %s", got, want)
	}
	// The same head with a spaced-out first message and another tail.
	spaced := bytes.Replace(body, []byte(`{"role":"user","content":"message 0:`), []byte(`{ "role" : "user",  "content" : "message 0:`), 1)
	spaced = bytes.Replace(spaced, []byte("message 299"), []byte("message 300"), 1)
	if got := sessionID(chatFormat, req, spaced, http.Header{}); got != want {
		t.Errorf("derived id of the spaced body %s, want %s", got, want)
	}
	// A prompt_cache_key after the messages still wins.
	keyed := append(bytes.TrimSuffix(body, []byte("}")), `,"prompt_cache_key":"late"}`...)
	if got := sessionID(chatFormat, req, keyed, http.Header{}); got != "late" {
		t.Errorf("prompt_cache_key after the messages: got %q", got)
	}
}

// bigSessionBody is a ~300 KB chat body of 300 plain messages (the shape
// of bigChat in bench_test.go), with a system message first.
func bigSessionBody() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"anthropic/claude-sonnet-4-5","stream":false,"messages":[{"role":"system","content":"be brief"}`)
	for i := range 300 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `,{"role":%q,"content":%q}`, role, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 37)))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkSessionID(b *testing.B) {
	body := bigSessionBody()
	req, err := openai.DecodeChatRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = sessionID(chatFormat, req, body, http.Header{})
	}
}
