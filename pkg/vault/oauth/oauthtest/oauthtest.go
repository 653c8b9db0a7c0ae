// Package oauthtest is a fake OAuth authorization server for login tests
// (test-only): an authorize endpoint that redirects to the redirect URI
// with a code, a token endpoint that checks the PKCE verifier, the client
// id, the redirect URI and the state of that code, and the login
// follow-up endpoints (Google userinfo and Cloud Code Assist, the Claude
// bootstrap, an API-key models listing). It also answers the refresh-token
// grant for the refresh token it issued, so a test can prove a logged-in
// credential refreshes.
package oauthtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// Exchange is one token request the fake received.
type Exchange struct {
	Code        string
	VerifierOK  bool   // S256(code_verifier) equalled the code's challenge
	HadVerifier bool   // a code_verifier was sent
	State       string // the state sent with the exchange (Anthropic), "" if none
	JSON        bool   // the body was JSON
	ClientID    string
	RedirectURI string
	Status      int // what the fake answered
}

type grant struct {
	challenge, method, clientID, redirect, state string
}

// Server is the fake. Change the exported fields through Set: the server
// reads them from its own goroutines (and requests may come from another
// process, which the race detector cannot see).
type Server struct {
	*httptest.Server

	// Reply is the token reply for a successful exchange (access_token,
	// refresh_token, expires_in, provider extras).
	Reply map[string]any
	// Email is the userinfo answer; Project the Cloud Code Assist project;
	// Onboard makes loadCodeAssist report no tier until onboardUser ran.
	Email, Project string
	Onboard        bool
	// ChatStatus and ChatBody, when ChatStatus is set, are the chat probe's
	// answer to the right key; ChatRequest is the last probe body.
	ChatStatus  int
	ChatBody    string
	ChatRequest []byte
	// Key is the API key the models endpoint accepts.
	Key string
	// Bootstrap is the Claude bootstrap oauth_account object (nil → 404).
	Bootstrap map[string]any

	mu        sync.Mutex
	grants    map[string]grant
	exchanges []Exchange
	onboarded bool
	refreshes int
	calls     map[string]int
}

// New starts a fake authorization server, closed when t ends.
func New(t testing.TB) *Server {
	s := &Server{grants: map[string]grant{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /userinfo", s.userinfo)
	mux.HandleFunc("POST /v1internal:loadCodeAssist", s.loadCodeAssist)
	mux.HandleFunc("POST /v1internal:onboardUser", s.onboardUser)
	mux.HandleFunc("GET /v1internal/operations/1", s.operation)
	mux.HandleFunc("GET /api/claude_cli/bootstrap", s.bootstrap)
	mux.HandleFunc("GET /models", s.models)
	mux.HandleFunc("POST /chat/completions", s.chat)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Set changes the fake's configuration under its lock.
func (s *Server) Set(f func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Exchanges returns the token requests received so far.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.exchanges...)
}

// Calls returns how often path was requested.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

func (s *Server) count(r *http.Request) {
	s.mu.Lock()
	s.calls[r.URL.Path]++
	s.mu.Unlock()
}

// authorize records the PKCE challenge for a new code and redirects to
// redirect_uri?code=…&state=… like a provider after consent.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("response_type") != "code" || q.Get("client_id") == "" {
		http.Error(w, "bad authorize request", http.StatusBadRequest)
		return
	}
	code := random()
	s.mu.Lock()
	s.grants[code] = grant{q.Get("code_challenge"), q.Get("code_challenge_method"), q.Get("client_id"), q.Get("redirect_uri"), q.Get("state")}
	s.mu.Unlock()
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	vals := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := ct == "application/json"
	if isJSON {
		_ = json.Unmarshal(body, &vals)
	} else {
		form, _ := url.ParseQuery(string(body))
		for k := range form {
			vals[k] = form.Get(k)
		}
	}
	ex := Exchange{Code: vals["code"], State: vals["state"], JSON: isJSON, ClientID: vals["client_id"], RedirectURI: vals["redirect_uri"]}
	s.mu.Lock()
	g, ok := s.grants[vals["code"]]
	delete(s.grants, vals["code"]) // a code is good once
	s.mu.Unlock()
	fail := func(desc string) {
		ex.Status = http.StatusBadRequest
		s.mu.Lock()
		s.exchanges = append(s.exchanges, ex)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": desc})
	}
	if vals["grant_type"] == "refresh_token" {
		s.refresh(w, vals)
		return
	}
	if vals["grant_type"] != "authorization_code" || !ok {
		fail("unknown code")
		return
	}
	if v, has := vals["code_verifier"]; has {
		ex.HadVerifier = true
		ex.VerifierOK = g.method == "S256" && oauth2.S256ChallengeFromVerifier(v) == g.challenge
	}
	switch {
	case g.challenge != "" && !ex.VerifierOK:
		fail("PKCE verification failed")
		return
	case ex.ClientID != g.clientID:
		fail("client_id mismatch")
		return
	case ex.RedirectURI != g.redirect:
		fail("redirect_uri mismatch")
		return
	case ex.State != "" && ex.State != g.state:
		fail("state mismatch")
		return
	}
	ex.Status = http.StatusOK
	s.mu.Lock()
	s.exchanges = append(s.exchanges, ex)
	reply, _ := json.Marshal(s.Reply)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(reply)
}

// refresh answers a refresh-token grant for the refresh token of Reply
// with a new access token and a rotated refresh token, like providers
// that rotate on every use; the old refresh token is spent.
func (s *Server) refresh(w http.ResponseWriter, vals map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshes++
	cur, _ := s.Reply["refresh_token"].(string)
	if cur == "" || vals["refresh_token"] != cur {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
		return
	}
	next := map[string]any{}
	for k, v := range s.Reply {
		next[k] = v
	}
	next["access_token"] = "at-refreshed-" + random()
	next["refresh_token"] = "rt-refreshed-" + random()
	s.Reply = next
	writeJSON(w, next)
}

// Refreshes returns how many refresh-token grants were received.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

func (s *Server) bearer(r *http.Request) string {
	const p = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) > len(p) && h[:len(p)] == p {
		return h[len(p):]
	}
	return ""
}

// accessOK: the follow-up carries the access token of the reply.
func (s *Server) accessOK(w http.ResponseWriter, r *http.Request) bool {
	s.count(r)
	s.mu.Lock()
	want, _ := s.Reply["access_token"].(string)
	s.mu.Unlock()
	if want == "" || s.bearer(r) != want {
		http.Error(w, `{"error":"unauthenticated"}`, http.StatusUnauthorized)
		return false
	}
	return true
}

func (s *Server) userinfo(w http.ResponseWriter, r *http.Request) {
	if s.accessOK(w, r) {
		s.mu.Lock()
		email := s.Email
		s.mu.Unlock()
		writeJSON(w, map[string]any{"email": email})
	}
}

func (s *Server) loadCodeAssist(w http.ResponseWriter, r *http.Request) {
	if !s.accessOK(w, r) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Onboard && !s.onboarded {
		writeJSON(w, map[string]any{"allowedTiers": []map[string]any{{"id": "free-tier", "isDefault": true}}})
		return
	}
	writeJSON(w, map[string]any{"currentTier": map[string]any{"id": "free-tier"}, "cloudaicompanionProject": s.Project})
}

func (s *Server) onboardUser(w http.ResponseWriter, r *http.Request) {
	if s.accessOK(w, r) {
		writeJSON(w, map[string]any{"name": "operations/1", "done": false})
	}
}

func (s *Server) operation(w http.ResponseWriter, r *http.Request) {
	if !s.accessOK(w, r) {
		return
	}
	s.mu.Lock()
	s.onboarded = true
	project := s.Project
	s.mu.Unlock()
	writeJSON(w, map[string]any{"name": "operations/1", "done": true,
		"response": map[string]any{"@type": "OnboardUserResponse", "cloudaicompanionProject": map[string]any{"id": project}}})
}

func (s *Server) bootstrap(w http.ResponseWriter, r *http.Request) {
	if !s.accessOK(w, r) {
		return
	}
	// Claude Code's bootstrap request names the CLI as claude-code/<version>.
	if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "claude-code/") {
		http.Error(w, "unexpected User-Agent "+ua, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	b := s.Bootstrap
	s.mu.Unlock()
	if b == nil {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, map[string]any{"oauth_account": b})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	s.mu.Lock()
	key := s.Key
	s.mu.Unlock()
	if key == "" || s.bearer(r) != key {
		http.Error(w, `{"error":{"message":"invalid api key"}}`, http.StatusUnauthorized)
		return
	}
	writeJSON(w, map[string]any{"data": []any{}})
}

// LastChat returns the body of the latest chat probe.
func (s *Server) LastChat() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ChatRequest
}

// chat answers an OpenAI-compatible chat completion for API-key login
// probes: 401 for another key, ChatStatus (with ChatBody) when set, else a
// one-token completion. The last request body is kept in ChatRequest.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.count(r)
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	key, status, reply := s.Key, s.ChatStatus, s.ChatBody
	s.ChatRequest = body
	s.mu.Unlock()
	if key == "" || s.bearer(r) != key {
		http.Error(w, `{"error":{"message":"invalid api key","code":"invalid_api_key"}}`, http.StatusUnauthorized)
		return
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
		return
	}
	writeJSON(w, map[string]any{"id": "chatcmpl-probe", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "p"}, "finish_reason": "length"}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// JWT returns an unsigned JWT with claims (what identity parsing reads).
func JWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(b) + ".sig"
}

// Visit is a fake browser: it opens authURL and follows the redirect to the
// login's callback, returning the callback's status.
func Visit(authURL string) (int, error) {
	resp, err := http.Get(authURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
