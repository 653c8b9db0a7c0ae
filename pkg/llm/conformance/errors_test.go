package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// errCase is an upstream failure before the first byte of the answer.
type errCase struct {
	name     string
	upstream string
	reply    upstreamReply
	status   int    // the upstream status the gateway classifies
	quota    bool   // a usage / quota limit (C/R: insufficient_quota)
	message  string // the upstream message the client must see
	retry    string // the Retry-After the client must get ("" = none)
}

func anErr(status int, typ, msg string) upstreamReply {
	return upstreamReply{status: status, contentType: "application/json", header: map[string]string{"request-id": "req_1"},
		body: `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`}
}

func oaErr(status int, typ, code, msg string) upstreamReply {
	c := "null"
	if code != "" {
		c = `"` + code + `"`
	}
	return upstreamReply{status: status, contentType: "application/json",
		body: `{"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":` + c + `}}`}
}

func geErr(status int, st, msg string) upstreamReply {
	return upstreamReply{status: status, contentType: "application/json",
		body: `{"error":{"code":` + itoa(status) + `,"message":"` + msg + `","status":"` + st + `"}}`}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func withRetry(r upstreamReply) upstreamReply {
	h := map[string]string{"retry-after": "7"}
	for k, v := range r.header {
		h[k] = v
	}
	r.header = h
	return r
}

var errCases = []errCase{
	{"an_400", "anthropic", anErr(400, "invalid_request_error", "messages: bad"), 400, false, "messages: bad", ""},
	{"an_401", "anthropic", anErr(401, "authentication_error", "invalid x-api-key"), 401, false, "invalid x-api-key", ""},
	{"an_403", "anthropic", anErr(403, "permission_error", "no access"), 403, false, "no access", ""},
	{"an_404", "anthropic", anErr(404, "not_found_error", "model: nope"), 404, false, "model: nope", ""},
	{"an_413", "anthropic", anErr(413, "request_too_large", "too large"), 413, false, "too large", ""},
	{"an_429_retry_after", "anthropic", withRetry(anErr(429, "rate_limit_error", "slow down")), 429, false, "slow down", "7"},
	{"an_500", "anthropic", anErr(500, "api_error", "internal"), 500, false, "internal", ""},
	{"an_529_overloaded", "anthropic", withRetry(anErr(529, "overloaded_error", "Overloaded")), 529, false, "Overloaded", "7"},
	{"an_overloaded_first_event", "anthropic", upstreamReply{status: 200, contentType: sseType,
		body: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"}, 529, false, "Overloaded", ""},

	{"oc_400", "openai-chat", oaErr(400, "invalid_request_error", "", "bad messages"), 400, false, "bad messages", ""},
	{"oc_401", "openai-chat", oaErr(401, "invalid_request_error", "invalid_api_key", "Incorrect API key"), 401, false, "Incorrect API key", ""},
	{"oc_403", "openai-chat", oaErr(403, "invalid_request_error", "unsupported_country_region_territory", "Country not supported"), 403, false, "Country not supported", ""},
	{"oc_404", "openai-chat", oaErr(404, "invalid_request_error", "model_not_found", "The model does not exist"), 404, false, "The model does not exist", ""},
	{"oc_413", "openai-chat", oaErr(413, "invalid_request_error", "", "Request too large"), 413, false, "Request too large", ""},
	{"oc_429_rate_limit", "openai-chat", withRetry(oaErr(429, "requests", "rate_limit_exceeded", "Rate limit reached")), 429, false, "Rate limit reached", "7"},
	{"oc_429_quota", "openai-chat", oaErr(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"), 429, true, "You exceeded your current quota", ""},
	{"oc_500", "openai-chat", oaErr(500, "server_error", "", "The server had an error"), 500, false, "The server had an error", ""},
	{"oc_503_overloaded", "openai-chat", withRetry(oaErr(503, "server_error", "", "The engine is currently overloaded")), 503, false, "The engine is currently overloaded", "7"},

	{"or_400", "openai-responses", oaErr(400, "invalid_request_error", "", "bad input"), 400, false, "bad input", ""},
	{"or_429", "openai-responses", withRetry(oaErr(429, "tokens", "rate_limit_exceeded", "Rate limit reached")), 429, false, "Rate limit reached", "7"},
	{"or_500", "openai-responses", oaErr(500, "server_error", "", "boom"), 500, false, "boom", ""},
	{"cx_401", "openai-codex", upstreamReply{status: 401, contentType: "application/json", body: `{"detail":"Unauthorized"}`}, 401, false, "Unauthorized", ""},
	{"cx_429_usage_limit_text", "openai-codex", upstreamReply{status: 429, contentType: "text/plain",
		body: "You have hit your ChatGPT usage limit (plus plan). Try again in ~158 min."}, 429, true, "You have hit your ChatGPT usage limit (plus plan). Try again in ~158 min.", ""},

	{"ge_400", "google", geErr(400, "INVALID_ARGUMENT", "API key not valid"), 400, false, "API key not valid", ""},
	{"ge_403", "google", geErr(403, "PERMISSION_DENIED", "denied"), 403, false, "denied", ""},
	{"ge_404", "google", geErr(404, "NOT_FOUND", "models/x is not found"), 404, false, "models/x is not found", ""},
	{"ge_429_retry_info", "google", upstreamReply{status: 429, contentType: "application/json",
		body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`},
		429, true, "Resource has been exhausted (e.g. check quota).", "7"},
	{"ge_500", "google", geErr(500, "INTERNAL", "internal"), 500, false, "internal", ""},
	{"ge_503", "google", geErr(503, "UNAVAILABLE", "The model is overloaded."), 503, false, "The model is overloaded.", ""},
	{"gc_401", "google-gemini-cli", geErr(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), 401, false, "Request had invalid authentication credentials.", ""},
}

// wantAnthropic is table 10.2's A column.
func wantAnthropic(status int) (int, string) {
	switch status {
	case 400:
		return 400, "invalid_request_error"
	case 401:
		return 401, "authentication_error"
	case 403:
		return 403, "permission_error"
	case 404:
		return 404, "not_found_error"
	case 413:
		return 413, "request_too_large"
	case 429:
		return 429, "rate_limit_error"
	case 503, 529:
		return 529, "overloaded_error"
	case 504:
		return 504, "timeout_error"
	}
	return status, "api_error"
}

// wantOpenAI is table 10.2's C/R column: status, type and code.
func wantOpenAI(status int, quota bool) (int, string, any) {
	switch {
	case status == 401:
		return 401, "invalid_request_error", "invalid_api_key"
	case status == 404:
		return 404, "invalid_request_error", "model_not_found"
	case status == 429 && quota:
		return 429, "insufficient_quota", "insufficient_quota"
	case status == 429:
		return 429, "requests", "rate_limit_exceeded"
	case status < 500:
		return status, "invalid_request_error", nil
	case status == 529:
		return 503, "server_error", nil
	}
	return status, "server_error", nil
}

// wantPi is table 10.2's P column.
func wantPi(status int) (int, string) {
	switch {
	case status == 401 || status == 403:
		return status, "authentication_error"
	case status == 429:
		return 429, "rate_limit_error"
	case status < 500:
		return status, "invalid_request_error"
	}
	return status, "upstream_error"
}

// TestUpstreamErrorMapping checks that an upstream failure before the
// first byte reaches every inbound client as its own error envelope with
// the mapped status, JSON content type and forwarded retry-after, never as
// 200 + SSE.
func TestUpstreamErrorMapping(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := upstreamNamed(t, tc.upstream)
			for _, in := range inbounds {
				for _, stream := range []bool{true, false} {
					res := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, stream)), tc.reply)
					ct := res.header.Get("Content-Type")
					if !strings.HasPrefix(ct, "application/json") {
						t.Errorf("%s: content type %q", in.name, ct)
					}
					if got := res.header.Get("Retry-After"); got != tc.retry {
						t.Errorf("%s: Retry-After %q, want %q", in.name, got, tc.retry)
					}
					var env map[string]any
					if err := json.Unmarshal(res.body, &env); err != nil {
						t.Fatalf("%s: error body is not JSON: %s", in.name, res.body)
					}
					e, _ := env["error"].(map[string]any)
					var status int
					var typ string
					switch in.name {
					case "messages":
						status, typ = wantAnthropic(tc.status)
						if env["type"] != "error" {
							t.Errorf("messages: envelope lacks type:error: %s", res.body)
						}
					case "chat", "responses":
						var code any
						status, typ, code = wantOpenAI(tc.status, tc.quota)
						if _, ok := e["param"]; !ok || e["code"] != code {
							t.Errorf("%s: param/code wrong, want code %v: %s", in.name, code, res.body)
						}
					case "pi":
						status, typ = wantPi(tc.status)
						if res.header.Get("Cache-Control") != "no-store" {
							t.Errorf("pi: error without Cache-Control: no-store")
						}
					}
					if res.status != status || e["type"] != typ {
						t.Errorf("%s stream=%v: got %d %v, want %d %s: %s", in.name, stream, res.status, e["type"], status, typ, res.body)
					}
					if e["message"] != tc.message {
						t.Errorf("%s: message %q, want the upstream's %q", in.name, e["message"], tc.message)
					}
				}
			}
		})
	}
}

// TestMidStreamErrors: after partial text the upstream
// fails; every stream client gets its format's failure and no success
// marker, and the non-streaming client an error status.
func TestMidStreamErrors(t *testing.T) {
	want := map[string]struct{ a, c string }{
		"anthropic":         {"error:overloaded_error", "error"},
		"openai-chat":       {"error:api_error", "error"},
		"openai-responses":  {"error:api_error", "error"},
		"openai-codex":      {"error:api_error", "error"},
		"google":            {"error:overloaded_error", "error"},
		"google-gemini-cli": {"error:overloaded_error", "error"},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			tn := turn{text: []string{"Partial ", "answer"}, failAfterText: true}
			for _, in := range inbounds {
				res := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, true)), okReply(up, tn))
				checkStream(t, in.name, res.body, in.name == "pi")
				got := finalStop(t, in.name, res.body)
				exp := map[string]string{"messages": want[up.name].a, "chat": want[up.name].c, "responses": "failed", "pi": "error:error"}[in.name]
				if got != exp {
					t.Errorf("%s: stream ends with %q, want %q", in.name, got, exp)
				}
				if in.name == "responses" && !strings.Contains(string(res.body), "event: error\n") {
					t.Errorf("responses: no error event before response.failed")
				}
				checkSDKSeesFailure(t, in.name, res.body)
				whole := exchange(t, in, up, []byte(toolsBodies2(in.name, up.model.ID, false)), okReply(up, tn))
				if whole.status < 500 {
					t.Errorf("%s non-stream: status %d, want 5xx: %s", in.name, whole.status, whole.body)
				}
			}
		})
	}
}

// checkSDKSeesFailure checks that the official Go SDKs report a failed
// stream as a failure, never as a normal end.
func checkSDKSeesFailure(t *testing.T, in string, body []byte) {
	t.Helper()
	switch in {
	case "messages":
		msg, err := anthropicAccumulate(t, body)
		if err == nil {
			t.Errorf("anthropic-sdk-go ended a failed stream without error (stop %q)", msg.StopReason)
		}
	case "chat":
		if _, _, err := chatAccumulate(t, body); err == nil {
			t.Errorf("openai-go ended a failed chat stream without error")
		}
	case "responses":
		final, err := responsesTerminal(t, body)
		if err != nil || final == nil || final.Status != "failed" {
			t.Errorf("openai-go: failed responses stream ended with %v (err %v)", final, err)
		}
	}
}
