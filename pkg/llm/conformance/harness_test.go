package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/anthropic"
	"github.com/ompgo/omp/pkg/llm/google"
	"github.com/ompgo/omp/pkg/llm/llmtest"
	"github.com/ompgo/omp/pkg/llm/openai"
	"github.com/ompgo/omp/pkg/llm/pinative"
)

// fixedNow is the clock of every provider and encoder in the suite.
var fixedNow = time.Unix(1700000000, 0).UTC()

func clock() time.Time { return fixedNow }

// Fixed ids the gateway would otherwise draw at random.
const (
	chatID     = "chatcmpl-conformance"
	responseID = "resp_conformance"
	messageID  = "msg_conformance"
	sessionID  = "sess-conformance"
)

// upstreamReply is what the scripted upstream answers.
type upstreamReply struct {
	status      int
	contentType string // "" sends no Content-Type (the Codex backend does that)
	header      map[string]string
	body        string
}

// captured is the request the scripted upstream received.
type captured struct {
	method, path string
	header       http.Header
	body         []byte
}

// fakeUpstream starts a server that records one request and answers with
// reply.
func fakeUpstream(t *testing.T, reply upstreamReply) (*httptest.Server, *captured) {
	t.Helper()
	got := &captured{}
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		once.Do(func() {
			got.method, got.path, got.header, got.body = r.Method, r.URL.RequestURI(), r.Header.Clone(), body
		})
		if reply.contentType != "" {
			w.Header().Set("Content-Type", reply.contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing either
		}
		for k, v := range reply.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(reply.status)
		_, _ = io.WriteString(w, reply.body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// upstream is one upstream family under test.
type upstream struct {
	name  string
	model llm.Model
	cred  llm.Credential
	// provider returns the Provider pointed at the scripted server.
	provider func(base string) llm.Provider
	// script renders a turn in the upstream's wire shape.
	script      func(tn turn) string
	contentType string
}

func catalogModel(provider, id, api string) llm.Model {
	m, ok := llm.Builtin().Lookup(provider, id)
	if !ok {
		m = llm.Model{ID: id, Provider: provider, Reasoning: true, MaxTokens: 32000}
	}
	m.API = api
	return m
}

// geminiIDs returns deterministic ids for Gemini calls that come without one.
func geminiIDs() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return "call_ge_" + strconv.Itoa(n)
	}
}

const sseType = "text/event-stream; charset=utf-8"

var upstreams = []upstream{
	{
		name:  "anthropic",
		model: catalogModel("anthropic", "claude-sonnet-4-5", llm.APIAnthropic),
		cred:  llm.APIKey("sk-ant-test"),
		provider: func(base string) llm.Provider {
			return &anthropic.Provider{BaseURL: base, Now: clock}
		},
		script: anthropicScript, contentType: sseType,
	},
	{
		name:  "openai-chat",
		model: catalogModel("openai", "gpt-5-mini", llm.APIOpenAIChat),
		cred:  llm.APIKey("sk-openai-test"),
		provider: func(base string) llm.Provider {
			// The switches of the real OpenAI API, not of a generic
			// compatible server (which is what 127.0.0.1 resolves to).
			compat := openai.ResolveChatCompat(catalogModel("openai", "gpt-5-mini", llm.APIOpenAIChat), openai.DefaultBaseURL)
			return &openai.ChatProvider{BaseURL: base + "/v1", Now: clock, Compat: &compat}
		},
		script: chatScript, contentType: sseType,
	},
	{
		name:  "openai-responses",
		model: catalogModel("openai", "gpt-5", llm.APIOpenAIResponses),
		cred:  llm.APIKey("sk-openai-test"),
		provider: func(base string) llm.Provider {
			return &openai.ResponsesProvider{BaseURL: base + "/v1", Now: clock}
		},
		script: func(tn turn) string { return responsesScript(tn, false) }, contentType: sseType,
	},
	{
		name:  "openai-codex",
		model: catalogModel("openai-codex", "gpt-5.4", llm.APICodex),
		cred:  llm.Credential{Kind: llm.CredentialOAuth, Secret: "chatgpt-access-token", AccountID: "acct-conformance"},
		provider: func(base string) llm.Provider {
			return &openai.CodexProvider{BaseURL: base + "/backend-api", Now: clock}
		},
		script: func(tn turn) string { return responsesScript(tn, true) }, contentType: "",
	},
	{
		name:  "google",
		model: catalogModel("google", "gemini-2.5-pro", llm.APIGoogle),
		cred:  llm.APIKey("google-api-key-test"),
		provider: func(base string) llm.Provider {
			return &google.Gemini{BaseURL: base + "/v1beta", Now: clock, NewID: geminiIDs()}
		},
		script: func(tn turn) string { return geminiScript(tn, false) }, contentType: sseType,
	},
	{
		name:  "google-gemini-cli",
		model: catalogModel("google-gemini-cli", "gemini-2.5-pro", llm.APIGeminiCLI),
		cred:  llm.Credential{Kind: llm.CredentialOAuth, Secret: "ya29.test-token", ProjectID: "proj-conformance"},
		provider: func(base string) llm.Provider {
			return &google.CodeAssist{BaseURL: base, Now: clock, NewID: geminiIDs()}
		},
		script: func(tn turn) string { return geminiScript(tn, true) }, contentType: sseType,
	},
}

func upstreamNamed(t *testing.T, name string) upstream {
	t.Helper()
	for _, u := range upstreams {
		if u.name == name {
			return u
		}
	}
	t.Fatalf("no upstream %q", name)
	return upstream{}
}

// inbound is one inbound wire format: how the gateway decodes a body and
// encodes the canonical events back.
type inbound struct {
	name string // chat, messages, responses, pi
	// header holds the allow-listed inbound headers a typical client sends.
	header map[string]string
	decode func(body []byte) (*llm.Request, error)
	// newEncoder returns the stream encoder for one response.
	newEncoder func(req *llm.Request) func(dst []byte, ev *llm.Event) []byte
	// final encodes a finished non-streaming turn; ok is false when the
	// turn must be answered with an error envelope instead.
	final func(req *llm.Request, m *llm.Message) (body []byte, ok bool)
	// errorBody encodes a failure in the format's error envelope.
	errorBody func(err error) (status int, body []byte)
	// errorType is the content type of error answers.
	errorType string
}

var inbounds = []inbound{
	{
		name:   "chat",
		decode: openai.DecodeChatRequest,
		newEncoder: func(req *llm.Request) func([]byte, *llm.Event) []byte {
			s := openai.NewChatStream(openai.ChatOptions{ID: chatID, Model: req.Model, Created: fixedNow.Unix(), IncludeUsage: req.IncludeStreamingUsage})
			return s.Append
		},
		final: func(req *llm.Request, m *llm.Message) ([]byte, bool) {
			if !m.StopReason.IsTerminalSuccess() && !m.Stop.Safety {
				return nil, false
			}
			return openai.AppendChatCompletion(nil, m, openai.ChatOptions{ID: chatID, Model: req.Model, Created: fixedNow.Unix()}), true
		},
		errorBody: openaiError, errorType: "application/json",
	},
	{
		name:   "messages",
		header: map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14", "anthropic-version": "2023-06-01"},
		decode: anthropic.DecodeRequest,
		newEncoder: func(req *llm.Request) func([]byte, *llm.Event) []byte {
			return anthropic.NewStreamEncoder(req.Model, messageID).Encode
		},
		final: func(req *llm.Request, m *llm.Message) ([]byte, bool) {
			b, err := anthropic.EncodeMessage(nil, m, req.Model, messageID)
			return b, err == nil
		},
		errorBody: anthropic.EncodeError, errorType: "application/json",
	},
	{
		name:   "responses",
		header: map[string]string{"originator": "codex_exec"},
		decode: openai.DecodeResponsesRequest,
		newEncoder: func(req *llm.Request) func([]byte, *llm.Event) []byte {
			return openai.NewResponsesStream(openai.ResponsesOptions{ID: responseID, Model: req.Model, Created: fixedNow.Unix()}).Append
		},
		final: func(req *llm.Request, m *llm.Message) ([]byte, bool) {
			if !m.StopReason.IsTerminalSuccess() && !m.Stop.Safety {
				return nil, false
			}
			return openai.AppendResponse(nil, m, openai.ResponsesOptions{ID: responseID, Model: req.Model, Created: fixedNow.Unix()}), true
		},
		errorBody: openaiError, errorType: "application/json",
	},
	{
		name: "pi",
		decode: func(body []byte) (*llm.Request, error) {
			r, err := pinative.DecodeRequest(body)
			if err != nil {
				return nil, err
			}
			return &r.Canonical, nil
		},
		newEncoder: func(*llm.Request) func([]byte, *llm.Event) []byte {
			return func(dst []byte, ev *llm.Event) []byte {
				dst = pinative.AppendFrame(dst, ev)
				if ev.Type.IsTerminal() {
					dst = pinative.AppendDone(dst)
				}
				return dst
			}
		},
		final: func(_ *llm.Request, m *llm.Message) ([]byte, bool) {
			if !m.StopReason.IsTerminalSuccess() {
				return nil, false
			}
			return pinative.AppendResponse(nil, m), true
		},
		errorBody: func(err error) (int, []byte) {
			c := llm.Classify(err)
			return c.Status, pinative.AppendError(nil, pinative.ErrorType(c.Status), errorMessage(err))
		},
		errorType: pinative.ContentTypeJSON,
	},
}

func inboundNamed(t *testing.T, name string) inbound {
	t.Helper()
	for _, in := range inbounds {
		if in.name == name {
			return in
		}
	}
	t.Fatalf("no inbound %q", name)
	return inbound{}
}

// errorMessage is the client-facing message of a failure: the upstream's
// own message.
func errorMessage(err error) string {
	var ue *llm.UpstreamError
	var ir *llm.InvalidRequestError
	switch {
	case errors.As(err, &ue) && ue.Message != "":
		return ue.Message
	case errors.As(err, &ir):
		return ir.Message
	case err != nil:
		return err.Error()
	}
	return "Upstream request failed"
}

// openaiError is the C/R error glue: classify, map the status (529 → 503)
// and write the envelope.
func openaiError(err error) (int, []byte) {
	c := llm.Classify(err)
	status := openai.ErrorStatus(c.Status)
	return status, openai.AppendErrorBody(nil, status, errorMessage(err), c.UsageLimit)
}

// result is what the client of the simulated gateway receives.
type result struct {
	status int
	header http.Header
	body   []byte
	// events are the canonical events the provider produced (copies of
	// the terminal partial only).
	events []llm.Event
	// final is the terminal message (nil when the provider failed first).
	final *llm.Message
	up    *captured
}

// exchange runs one request through decode → provider → encode.
func exchange(t *testing.T, in inbound, up upstream, body []byte, reply upstreamReply) result {
	t.Helper()
	srv, got := fakeUpstream(t, reply)
	res := result{header: http.Header{}, up: got}
	req, err := in.decode(body)
	if err != nil {
		t.Fatalf("%s: decode: %v", in.name, err)
	}
	// Gateway steps 5 and 6: passthrough headers and the session key.
	if len(in.header) > 0 {
		req.Headers = map[string]string{}
		for k, v := range in.header {
			req.Headers[k] = v
		}
	}
	if req.SessionID == "" {
		req.SessionID = sessionID
	}
	if req.PromptCacheKey == "" {
		req.PromptCacheKey = req.SessionID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := up.provider(srv.URL).Stream(ctx, req, &up.model, up.cred)
	if err != nil {
		res.fail(in, err)
		return res
	}
	defer stream.Close()
	if req.Stream {
		res.status = http.StatusOK
		res.header.Set("Content-Type", sseType)
		enc := in.newEncoder(req)
		var buf []byte
		for ev := range stream.Events() {
			res.record(ev)
			buf = enc(buf, &ev)
			if ev.Type.IsTerminal() {
				break
			}
		}
		res.body = buf
		res.checkGrammar(t)
		return res
	}
	for ev := range stream.Events() {
		res.record(ev)
		if ev.Type.IsTerminal() {
			break
		}
	}
	res.checkGrammar(t)
	if b, ok := in.final(req, res.final); ok {
		res.status = http.StatusOK
		res.header.Set("Content-Type", "application/json")
		res.body = b
		return res
	}
	var cause error = errors.New(res.final.ErrorMessage)
	if ev := res.events[len(res.events)-1]; ev.Err != nil {
		cause = ev.Err
	}
	if res.final.StopReason == llm.StopAborted {
		cause = context.Canceled
	}
	res.fail(in, cause)
	return res
}

// checkGrammar checks the order of the provider's canonical events.
func (r *result) checkGrammar(t *testing.T) {
	t.Helper()
	if err := llmtest.CheckGrammar(r.events); err != nil {
		t.Fatalf("canonical event grammar: %v", err)
	}
}

func (r *result) record(ev llm.Event) {
	if ev.Type.IsTerminal() && ev.Partial != nil {
		m := *ev.Partial
		m.Content = append([]llm.Content(nil), m.Content...)
		r.final = &m
		ev.Partial = &m
	} else {
		ev.Partial = nil
	}
	r.events = append(r.events, ev)
}

// fail answers with the inbound error envelope, forwarding retry-after
// on 429/503/529.
func (r *result) fail(in inbound, err error) {
	r.status, r.body = in.errorBody(err)
	r.header.Set("Content-Type", in.errorType)
	if in.name == "pi" {
		r.header.Set("Cache-Control", pinative.ErrorCacheControl)
	}
	var ue *llm.UpstreamError
	if errors.As(err, &ue) && ue.RetryAfter > 0 && (r.status == 429 || r.status == 503 || r.status == 529) {
		r.header.Set("Retry-After", strconv.Itoa(int(math.Ceil(ue.RetryAfter.Seconds()))))
	}
}

var reUserAgentPlatform = regexp.MustCompile(`\([a-z0-9]+; [a-z0-9_]+; terminal\)`)

// normalizeUpstream renders a captured upstream request with sorted keys
// and volatile values masked.
func normalizeUpstream(t *testing.T, c *captured) []byte {
	t.Helper()
	headers := map[string]string{}
	for k, v := range c.header {
		k = strings.ToLower(k)
		switch k {
		case "content-length", "accept-encoding":
			continue
		case "user-agent":
			if strings.HasPrefix(v[0], "Go-http-client") {
				continue
			}
			v = []string{reUserAgentPlatform.ReplaceAllString(v[0], "(<os>; <arch>; terminal)")}
		}
		headers[k] = strings.Join(v, ", ")
	}
	var body any
	d := json.NewDecoder(bytes.NewReader(c.body))
	d.UseNumber()
	if err := d.Decode(&body); err != nil {
		t.Fatalf("upstream body is not JSON: %v\n%s", err, c.body)
	}
	out, err := json.MarshalIndent(map[string]any{"method": c.method, "path": c.path, "headers": headers, "body": body}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}
