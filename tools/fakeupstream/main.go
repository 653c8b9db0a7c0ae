// Command fakeupstream is the stand-in provider of `make e2e-clis`
// (scripts/e2e-clis.sh): it speaks just enough of the Anthropic Messages
// API (POST /v1/messages, streamed or not, and /v1/messages/count_tokens)
// the OpenAI Responses API (POST /v1/responses, streamed or not) and the
// Gemini API (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent) to answer every request with a fixed text. A
// Gemini request whose user text holds ToolTurn and that offers the
// list_directory function (the Gemini CLI's) is answered with a call to
// it; once the conversation holds a functionResponse, with the text. It logs one JSON line per
// request (method, path, the credential headers it saw, the model) to
// -log, so the script can assert which key reached the upstream.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Answer is the text every completion returns.
const Answer = "pong from fake upstream"

// ToolTurn in a Gemini request's user text asks for a function call first.
const ToolTurn = "TOOL-TURN"

type entry struct {
	Time          string `json:"time"`
	Method        string `json:"method"`
	Path          string `json:"path"`
	XAPIKey       string `json:"x_api_key,omitempty"`
	XGoogAPIKey   string `json:"x_goog_api_key,omitempty"`
	Authorization string `json:"authorization,omitempty"`
	Model         string `json:"model,omitempty"`
	Stream        bool   `json:"stream"`
	Status        int    `json:"status"`
}

// dumpDir, when set, receives every request body.
var dumpDir string

// limitKey, when set, is the credential whose Anthropic requests get a
// usage-limit 429 (retry-after 120 s): the fleet interop's "account X".
var limitKey string

type server struct {
	n   int // guarded by mu
	mu  sync.Mutex
	out io.Writer
}

func (s *server) record(e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(e)
	fmt.Fprintf(s.out, "%s\n", b)
}

func main() {
	bind := flag.String("bind", "127.0.0.1:0", "listen address")
	logPath := flag.String("log", "", "request log (JSON lines; default stderr)")
	addrFile := flag.String("addr-file", "", "write the bound address here once listening")
	flag.StringVar(&dumpDir, "dump-dir", "", "also save each request body here (NNN-<path>.json)")
	flag.StringVar(&limitKey, "limit-key", "", "answer this credential's /v1/messages with a usage-limit 429")
	flag.Parse()
	var out io.Writer = os.Stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		out = f
	}
	ln, err := net.Listen("tcp", *bind)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	s := &server{out: out}
	log.Fatal(http.Serve(ln, s))
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	s.dump(r, body)
	e := entry{
		Time: time.Now().UTC().Format(time.RFC3339Nano), Method: r.Method, Path: r.URL.Path,
		XAPIKey: r.Header.Get("x-api-key"), XGoogAPIKey: r.Header.Get("x-goog-api-key"), Authorization: r.Header.Get("Authorization"),
		Model: req.Model, Stream: req.Stream, Status: http.StatusOK,
	}
	defer func() { s.record(e) }()
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && p == "/v1/messages" && limitKey != "" &&
		(e.XAPIKey == limitKey || e.Authorization == "Bearer "+limitKey):
		e.Status = http.StatusTooManyRequests
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your usage limit for this account"}}`)
	case r.Method == http.MethodPost && p == "/v1/messages":
		anthropicMessages(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && p == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 42})
	case r.Method == http.MethodPost && p == "/v1/responses":
		responses(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/v1beta/models/"):
		model, method, _ := strings.Cut(strings.TrimPrefix(p, "/v1beta/models/"), ":")
		e.Model, e.Stream = model, method == "streamGenerateContent"
		if method != "generateContent" && method != "streamGenerateContent" {
			e.Status = http.StatusNotFound
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"code":404,"message":"fake upstream: no method %s","status":"NOT_FOUND"}}`, method)
			return
		}
		gemini(w, model, e.Stream, body)
	case r.Method == http.MethodGet && p == "/v1/models":
		writeJSON(w, map[string]any{"object": "list", "data": []any{}})
	default:
		e.Status = http.StatusNotFound
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":"fake upstream: no route %s %s"}}`, r.Method, r.URL.Path)
	}
}

func (s *server) dump(r *http.Request, body []byte) {
	if dumpDir == "" {
		return
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	name := fmt.Sprintf("%03d-%s%s.json", n, r.Method, strings.ReplaceAll(r.URL.Path, "/", "_"))
	_ = os.WriteFile(filepath.Join(dumpDir, name), body, 0o600)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes one event; data is JSON-encoded.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func anthropicMessages(w http.ResponseWriter, model string, stream bool) {
	id := fmt.Sprintf("msg_fake_%d", time.Now().UnixNano())
	usage := map[string]any{"input_tokens": 12, "output_tokens": 6}
	if !stream {
		w.Header().Set("request-id", "req_fake")
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": Answer}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
		})
		return
	}
	w.Header().Set("request-id", "req_fake")
	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1},
	}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sse(w, "ping", map[string]any{"type": "ping"})
	for _, part := range []string{"pong ", "from fake ", "upstream"} {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": part}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 6}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func responses(w http.ResponseWriter, model string, stream bool) {
	now := time.Now()
	id := fmt.Sprintf("resp_fake_%d", now.UnixNano())
	msgID := "msg_fake_1"
	text := map[string]any{"type": "output_text", "text": Answer, "annotations": []any{}}
	item := map[string]any{"id": msgID, "type": "message", "status": "completed", "role": "assistant", "content": []any{text}}
	usage := map[string]any{
		"input_tokens": 12, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 6, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 18,
	}
	resp := func(status string, output []any, u any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": now.Unix(), "status": status,
			"model": model, "output": output, "usage": u}
	}
	if !stream {
		writeJSON(w, resp("completed", []any{item}, usage))
		return
	}
	startSSE(w)
	seq := 0
	ev := func(typ string, m map[string]any) {
		m["type"], m["sequence_number"] = typ, seq
		seq++
		sse(w, typ, m)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)})
	ev("response.output_item.added", map[string]any{"output_index": 0,
		"item": map[string]any{"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
	ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, part := range []string{"pong ", "from fake ", "upstream"} {
		ev("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "delta": part})
	}
	ev("response.output_text.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "text": Answer})
	ev("response.content_part.done", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0, "part": text})
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": resp("completed", []any{item}, usage)})
}

// geminiRequest is what the fake reads of a generateContent body.
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// wantsCall reports whether the fake answers with a list_directory call:
// the user asked for ToolTurn, the function is offered, and no function
// has answered yet.
func (g *geminiRequest) wantsCall() bool {
	asked, offered := false, false
	for _, c := range g.Contents {
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				return false
			}
			asked = asked || c.Role == "user" && strings.Contains(p.Text, ToolTurn)
		}
	}
	for _, t := range g.Tools {
		for _, f := range t.FunctionDeclarations {
			offered = offered || f.Name == "list_directory"
		}
	}
	return asked && offered
}

// gemini answers generateContent / streamGenerateContent: the fixed text
// in three chunks, or one list_directory call.
func gemini(w http.ResponseWriter, model string, stream bool, body []byte) {
	var req geminiRequest
	_ = json.Unmarshal(body, &req)
	var chunks [][]any
	if req.wantsCall() {
		chunks = [][]any{{map[string]any{"functionCall": map[string]any{"name": "list_directory", "args": map[string]any{"dir_path": "."}}}}}
	} else {
		for _, part := range []string{"pong ", "from fake ", "upstream"} {
			chunks = append(chunks, []any{map[string]any{"text": part}})
		}
	}
	usage := map[string]any{"promptTokenCount": 12, "candidatesTokenCount": 6, "totalTokenCount": 18}
	response := func(parts []any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": "fake-gemini-1"}
		if finish != "" {
			cand["finishReason"] = finish
			r["usageMetadata"] = usage
		}
		return r
	}
	if !stream {
		var parts []any
		for _, c := range chunks {
			parts = append(parts, c...)
		}
		writeJSON(w, response(parts, "STOP"))
		return
	}
	startSSE(w)
	for _, c := range chunks {
		data(w, response(c, ""))
	}
	data(w, response([]any{map[string]any{"text": ""}}, "STOP"))
}

// data writes one SSE frame without an event name.
func data(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
