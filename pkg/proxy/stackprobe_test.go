//go:build stackprobe && linux

package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
)

// TestRequestPathStackBudget runs only under `make stackcheck`
// (scripts/stackcheck.sh), which builds the test with a runtime whose
// newstack prints "STACKGROW" and a traceback when a goroutine outgrows
// 8 KiB. A goroutine keeps the stack it grew for as long as it lives, and
// a streamed request's handler goroutine lives for the whole stream: a
// request path deeper than 8 KiB anywhere doubled the stack of every open
// stream (issue 9). After one warm-up request per path (first uses run
// one-time initialisation: time zones, encoding/json's type cache), no
// goroutine net/http starts for a connection may grow past 8 KiB (but
// rarely, see maxRareGrowths) on any format, upstream API (Anthropic,
// OpenAI Chat and Responses, Codex, Gemini and Gemini CLI) or credential
// kind.
func TestRequestPathStackBudget(t *testing.T) {
	anthropic := strings.SplitAfter(anthropicText, "\n\n")
	chat := strings.SplitAfter(chatText, "\n\n")
	// The other upstream APIs answer with their recorded streams.
	recorded := func(path string) []string {
		b, err := os.ReadFile("../llm/" + path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitAfter(string(b), "\n\n")
	}
	responses, codex := recorded("openai/testdata/responses_reasoning_tools.sse"), recorded("openai/testdata/codex_sparse.sse")
	gemini, codeAssist := recorded("google/testdata/text_thinking.sse"), recorded("google/testdata/codeassist.sse")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		events := anthropic
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/chat/completions"):
			events = chat
		case strings.HasSuffix(p, "/codex/responses"):
			events = codex
		case strings.HasSuffix(p, "/responses"):
			events = responses
		case strings.HasPrefix(p, "/v1internal:"):
			events = codeAssist
		case strings.HasPrefix(p, "/v1beta/models/"):
			events = gemini
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	cat := llm.Builtin().With(llm.Model{ID: "gpt-4o-mini", Name: "GPT-4o mini", Provider: "openai", API: llm.APIOpenAIChat,
		Input: []llm.Modality{llm.ModalityText}, ContextWindow: 128000, MaxTokens: 16384})
	urls := map[string]string{"anthropic": up.URL, "openai": up.URL + "/v1", "openai-codex": up.URL + "/backend-api",
		"google": up.URL + "/v1beta", "google-gemini-cli": up.URL}
	codexEntry := oauthEntry(7, "openai-codex", "tok-codex")
	codexEntry.Credential.AccountID = "acct-probe"
	cliEntry := oauthEntry(9, "google-gemini-cli", "tok-cli")
	cliEntry.Credential.ProjectID = "probe-project"
	type path struct {
		name, route, body, want string
		entry                   vault.Entry
	}
	paths := []path{
		{"chat, anthropic, API key", "/v1/chat/completions", `{"model":"anthropic/claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"content":"Hello `, apiKeyEntry(1, "anthropic", "sk-ant-vault")},
		{"messages, anthropic, OAuth", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`, `"text":"Hello `, oauthEntry(2, "anthropic", "tok-a")},
		{"responses, anthropic, OAuth", "/v1/responses", `{"model":"anthropic/claude-sonnet-4-5","stream":true,"input":"hi"}`, `"delta":"Hello `, oauthEntry(3, "anthropic", "tok-b")},
		{"pi-native, anthropic, API key", "/v1/pi/stream", `{"model":"anthropic/claude-sonnet-4-5","context":{"messages":[{"role":"user","content":"hi","timestamp":1}]}}`, `Hello `, apiKeyEntry(4, "anthropic", "sk-ant-vault")},
		{"chat, openai chat, API key", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"content":"Hi `, apiKeyEntry(5, "openai", "sk-openai-vault")},
		{"chat non-streaming, anthropic, OAuth", "/v1/chat/completions", `{"model":"anthropic/claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`, `Hello`, oauthEntry(6, "anthropic", "tok-c")},
		{"chat, openai responses, API key", "/v1/chat/completions", `{"model":"openai/gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `Let me check.`, apiKeyEntry(10, "openai", "sk-openai-vault")},
		{"responses, codex, OAuth", "/v1/responses", `{"model":"openai-codex/gpt-5.4","stream":true,"input":"hi"}`, `Done.`, codexEntry},
		{"messages, gemini, API key", "/v1/messages", `{"model":"google/gemini-2.5-flash","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `Hello`, apiKeyEntry(8, "google", "AIza-probe")},
		{"chat, gemini cli, OAuth", "/v1/chat/completions", `{"model":"google-gemini-cli/gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `Checking.`, cliEntry},
	}
	gws := make([]*httptest.Server, len(paths))
	for i, p := range paths {
		gws[i] = gateway(t, &memSource{entries: []vault.Entry{p.entry}}, urls, cat)
	}
	// One request at a time, so the runtime's reports do not interleave,
	// each on a new connection: a goroutine keeps a stack it grew, so on a
	// kept-alive one a path's growth would show once for all its requests.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(i int) {
		p := paths[i]
		req, _ := http.NewRequest(http.MethodPost, gws[i].URL+p.route, strings.NewReader(p.body))
		req.Header.Set("Authorization", "Bearer "+gatewayToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(b, []byte(p.want)) {
			t.Errorf("%s: %d %s", p.name, resp.StatusCode, b)
		}
	}
	for i := range paths { // warm-up
		send(i)
	}
	// A positive control: a handler that must be reported, or the probe
	// runtime is not in (a silent pass otherwise).
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = stackprobeControl(16)
	}))
	defer control.Close()
	controlSeen := false
	for i, p := range paths {
		out := captureStderr(t, func() {
			for range runs {
				// Swept: an allocation's slow path that sweeps spans
				// (hundreds of bytes of runtime frames at the deepest
				// point) then only comes with a collection that starts
				// during the request.
				runtime.GC()
				send(i)
			}
			if i == len(paths)-1 {
				if resp, err := http.Get(control.URL); err == nil {
					resp.Body.Close()
				}
			}
		})
		// Each growth is "STACKGROW <old size> goid=N", a traceback, and
		// "created by <function> in goroutine M".
		// Counted per goroutine (one may grow twice) and only where the
		// traceback is the gateway's (the fake upstream's connection
		// goroutines are created by Serve too).
		var grown []string
		seen := map[string]bool{}
		for _, block := range strings.Split(out, "STACKGROW ")[1:] {
			sc := bufio.NewScanner(strings.NewReader(block))
			var created string
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "created by ") {
					created = l
					break
				}
			}
			if strings.Contains(block, "stackprobeControl") {
				controlSeen = true
				continue
			}
			goid, _, _ := strings.Cut(block[strings.Index(block, "goid=")+len("goid="):], "\n")
			if strings.HasPrefix(created, "created by net/http.(*Server).Serve") && strings.Contains(block, "omp/pkg/proxy.(*Server)") && !seen[goid] {
				seen[goid] = true
				grown = append(grown, block)
			}
		}
		// A path whose frames outgrow 8 KiB grows on every request. One
		// that comes within a runtime slow path of it grows now and then;
		// such a stream pays 8 KiB more, rarely, and is tolerated up to
		// maxRareGrowths times in runs requests.
		if len(grown) > maxRareGrowths {
			t.Errorf("%s: %d of %d requests' connection goroutines outgrew 8 KiB (docs/architecture.md, \"Testing\", says how to read the frames); the first:\nSTACKGROW %s", p.name, len(grown), runs, grown[0])
		}
		t.Logf("%s: %d of %d requests grew past 8 KiB", p.name, len(grown), runs)
	}
	if !controlSeen {
		t.Error("the control handler's 12 KiB of frames were not reported: the probe runtime is not built in (run make stackcheck)")
	}
}

// runs requests per path are measured; more than maxRareGrowths growths
// fail the path.
const runs, maxRareGrowths = 10, 1

// captureStderr runs f with file descriptor 2 (where the runtime prints)
// going to a pipe, and returns what was written.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&out, r); close(copied) }()
	if err := syscall.Dup3(int(w.Fd()), 2, 0); err != nil { // Dup2 is missing on some linux ports
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			_ = syscall.Dup3(saved, 2, 0)
			_ = syscall.Close(saved)
			w.Close()
			<-copied
		}
	}
	defer restore() // also when f stops the test (t.Fatal)
	f()
	restore()
	return out.String()
}

// stackprobeControl recurses through n frames of 768 bytes (12 KiB for 16).
//
//go:noinline
func stackprobeControl(n int) byte {
	var pad [768]byte
	pad[n] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return stackprobeControl(n-1) + pad[n]
}
