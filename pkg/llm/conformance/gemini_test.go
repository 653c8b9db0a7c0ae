package conformance

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/llm/google"
	"github.com/ompgo/omp/pkg/llm/llmtest"
)

// The Gemini API inbound row of the matrix. Its model and stream flag are
// in the URL, not the body, so its inbound is built per request.

const geminiResponseID = "gemresp_conformance"

func geminiInbound(model string, stream bool) inbound {
	return inbound{
		name: "gemini",
		decode: func(body []byte) (*llm.Request, error) {
			req, err := google.DecodeRequest(body)
			if err != nil {
				return nil, err
			}
			req.Model, req.Stream = model, stream
			return req, nil
		},
		newEncoder: func(req *llm.Request) func([]byte, *llm.Event) []byte {
			return google.NewStreamEncoder(req.Model, geminiResponseID, false).Encode
		},
		final: func(req *llm.Request, m *llm.Message) ([]byte, bool) {
			return google.AppendResponse(nil, m, req.Model, geminiResponseID)
		},
		errorBody: func(err error) (int, []byte) {
			status := google.ClientStatus(llm.Classify(err).Status)
			return status, google.AppendErrorBody(nil, status, errorMessage(err))
		},
		errorType: "application/json",
	}
}

// geminiBodies are the two scenarios as a Gemini client sends them: the
// question with a tool (OpenAPI-style parameters with upper-case types),
// a forced-auto toolConfig, a thinking budget, an inline image and safety
// settings; then the replay of the model turn (thought with its signature,
// text, two signed calls without ids) and both function responses.
var geminiBodies = map[string]string{
	"tools": `{"systemInstruction":{"parts":[{"text":"$SYS"}]},
 "contents":[{"role":"user","parts":[{"text":"$Q"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}],
 "tools":[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather",
   "parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING","nullable":true}},"required":["city"]}}]}],
 "toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},
 "safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],
 "generationConfig":{"temperature":0.5,"maxOutputTokens":4096,"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}}`,
	"replay": `{"systemInstruction":{"parts":[{"text":"$SYS"}]},
 "contents":[{"role":"user","parts":[{"text":"$Q"}]},
  {"role":"model","parts":[{"text":"Need both cities.","thought":true,"thoughtSignature":"c2lnLXByaW9yLXRob3VnaHQ="},
   {"text":"Checking both cities."},
   {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLXByaW9yLWNhbGw="},
   {"functionCall":{"name":"get_weather","args":{"city":"Tokyo"}}}]},
  {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18°C and sunny"}}},
   {"functionResponse":{"name":"get_weather","response":{"output":"22°C, rain"}}}]}],
 "tools":[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather","parametersJsonSchema":$SCHEMA}]}],
 "generationConfig":{"maxOutputTokens":4096,"thinkingConfig":{"thinkingLevel":"HIGH","includeThoughts":true}}}`,
}

func geminiBody(scenario string) []byte {
	return []byte(fill(geminiBodies[scenario], "gemini", "", false))
}

// geminiChunk is the part of a GenerateContentResponse the checks read.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             *string              `json:"text"`
				Thought          bool                 `json:"thought"`
				ThoughtSignature string               `json:"thoughtSignature"`
				FunctionCall     *google.FunctionCall `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount, CandidatesTokenCount, TotalTokenCount, ThoughtsTokenCount, CachedContentTokenCount int64
	} `json:"usageMetadata"`
	ModelVersion string          `json:"modelVersion"`
	ResponseID   string          `json:"responseId"`
	Error        json.RawMessage `json:"error"`
}

// geminiSummary is what a client makes of a response: the text, the
// thoughts, the calls, the finish reason and the usage.
type geminiSummary struct {
	text, thoughts, calls, finish string
	usage                         string
	errored                       bool
}

func (s *geminiSummary) add(t *testing.T, c *geminiChunk) {
	t.Helper()
	if len(c.Error) > 0 {
		s.errored = true
		return
	}
	if len(c.Candidates) != 1 {
		t.Fatalf("%d candidates", len(c.Candidates))
	}
	cand := c.Candidates[0]
	if cand.Content.Role != "model" || len(cand.Content.Parts) == 0 {
		t.Errorf("content role %q with %d parts", cand.Content.Role, len(cand.Content.Parts))
	}
	for _, p := range cand.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			s.calls += p.FunctionCall.ID + " " + p.FunctionCall.Name + string(p.FunctionCall.Args) + " sig=" + p.ThoughtSignature + ";"
		case p.Text == nil:
			t.Errorf("a part with neither text nor functionCall")
		case p.Thought:
			s.thoughts += *p.Text
		default:
			s.text += *p.Text
		}
	}
	if cand.FinishReason != "" {
		if s.finish != "" {
			t.Errorf("a second finishReason %q", cand.FinishReason)
		}
		s.finish = cand.FinishReason
		if c.UsageMetadata == nil {
			t.Fatalf("last chunk without usageMetadata")
		}
		u, _ := json.Marshal(c.UsageMetadata)
		s.usage = string(u)
	}
	if c.ModelVersion == "" || c.ResponseID == "" {
		t.Errorf("modelVersion %q responseId %q", c.ModelVersion, c.ResponseID)
	}
}

// geminiStream parses an SSE streamGenerateContent body: every frame is
// "data: <GenerateContentResponse>" and the last one finishes.
func geminiStream(t *testing.T, body []byte) geminiSummary {
	t.Helper()
	var s geminiSummary
	if !bytes.HasSuffix(body, []byte("\r\n\r\n")) {
		t.Fatalf("stream does not end with a whole frame: %q", body)
	}
	frames := strings.Split(strings.TrimSuffix(string(body), "\r\n\r\n"), "\r\n\r\n")
	for i, f := range frames {
		data, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("frame %d is not one data line: %q", i, f)
		}
		var c geminiChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		s.add(t, &c)
		if (s.finish != "" || s.errored) && i != len(frames)-1 {
			t.Errorf("frames after the last one")
		}
	}
	return s
}

func geminiWhole(t *testing.T, body []byte) geminiSummary {
	t.Helper()
	var c geminiChunk
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("body: %v", err)
	}
	var s geminiSummary
	s.add(t, &c)
	return s
}

// TestGeminiGoldens runs the Gemini inbound against every upstream, both
// scenarios, streamed and not: the stream and the whole answer must say
// the same thing, and the three goldens are compared as for the other
// inbound formats.
func TestGeminiGoldens(t *testing.T) {
	for _, up := range upstreams {
		for _, sc := range []struct {
			name  string
			reply turn
		}{{"tools", toolsTurn}, {"replay", answerTurn}} {
			name := "gemini__" + up.name + "__" + sc.name
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				model := up.model.ID
				streamed := exchange(t, geminiInbound(model, true), up, geminiBody(sc.name), okReply(up, sc.reply))
				whole := exchange(t, geminiInbound(model, false), up, geminiBody(sc.name), okReply(up, sc.reply))
				if streamed.status != 200 || whole.status != 200 {
					t.Fatalf("status stream=%d (%s) json=%d (%s)", streamed.status, streamed.body, whole.status, whole.body)
				}
				s, w := geminiStream(t, streamed.body), geminiWhole(t, whole.body)
				if s != w {
					t.Errorf("stream and whole answer differ:\n%+v\n%+v", s, w)
				}
				if s.finish != "STOP" || s.text == "" {
					t.Errorf("summary %+v", s)
				}
				if sc.name == "tools" && strings.Count(s.calls, "get_weather") != 2 {
					t.Errorf("calls %q", s.calls)
				}
				upStream, upWhole := normalizeUpstream(t, streamed.up), normalizeUpstream(t, whole.up)
				if !bytes.Equal(upStream, upWhole) {
					t.Errorf("upstream request depends on the inbound stream flag:\n%s\n---\n%s", upStream, upWhole)
				}
				llmtest.GoldenExact(t, name+".upstream.json", upStream)
				llmtest.GoldenExact(t, name+".stream.txt", streamed.body)
				llmtest.GoldenExact(t, name+".json", indentJSON(t, whole.body))
			})
		}
	}
}

// geminiFinish is the finishReason a Gemini client sees for each stop
// case: Gemini's own reason from a Gemini upstream, else STOP (tool calls
// included), MAX_TOKENS, SAFETY for a refusal, and an error object for a
// failed turn ("error").
var geminiFinish = map[string]string{
	"an_max_tokens_is_length":                        "MAX_TOKENS",
	"an_context_window_is_length_raw_for_a":          "MAX_TOKENS",
	"an_refusal_is_safety":                           "SAFETY",
	"oc_length_is_length":                            "MAX_TOKENS",
	"oc_content_filter_is_safety":                    "SAFETY",
	"or_max_output_tokens_is_length":                 "MAX_TOKENS",
	"or_content_filter_is_safety":                    "SAFETY",
	"or_failed_is_error":                             "error",
	"cx_max_output_tokens_is_length":                 "MAX_TOKENS",
	"cx_content_filter_is_safety":                    "SAFETY",
	"ge_max_tokens_is_length":                        "MAX_TOKENS",
	"ge_safety_is_safety":                            "SAFETY",
	"ge_recitation_is_safety":                        "RECITATION",
	"ge_blocklist_is_safety":                         "BLOCKLIST",
	"ge_prohibited_content_is_safety":                "PROHIBITED_CONTENT",
	"ge_spii_is_safety":                              "SPII",
	"ge_image_safety_is_safety":                      "IMAGE_SAFETY",
	"ge_malformed_function_call_is_error":            "error",
	"ge_other_is_error":                              "error",
	"gc_safety_is_safety":                            "SAFETY",
	"an_max_tokens_with_calls_is_length":             "MAX_TOKENS",
	"an_refusal_with_calls_is_tool_use_for_a":        "SAFETY",
	"oc_content_filter_with_calls_is_tool_use_for_a": "SAFETY",
}

// TestGeminiFinishReasons drives every upstream stop signal of the stop
// table through the Gemini encoder, streaming and not.
func TestGeminiFinishReasons(t *testing.T) {
	for _, tc := range stopCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := geminiFinish[tc.name]
			if want == "" {
				want = "STOP"
			}
			up := upstreamNamed(t, tc.upstream)
			tn := turn{text: []string{"Some text."}, finish: tc.finish, stopSeq: tc.stopSeq, usage: usage{input: 5, output: 3}}
			if tc.calls {
				tn.calls = toolsTurn.calls
			}
			streamed := exchange(t, geminiInbound(up.model.ID, true), up, geminiBody("tools"), okReply(up, tn))
			if streamed.status != 200 {
				t.Fatalf("stream status %d: %s", streamed.status, streamed.body)
			}
			s := geminiStream(t, streamed.body)
			got := s.finish
			if s.errored {
				got = "error"
			}
			if got != want {
				t.Errorf("stream: finishReason %q, want %q", got, want)
			}
			whole := exchange(t, geminiInbound(up.model.ID, false), up, geminiBody("tools"), okReply(up, tn))
			switch {
			case want == "error" && whole.status < 400:
				t.Errorf("non-stream: status %d for a failed turn: %s", whole.status, whole.body)
			case want != "error" && whole.status != 200:
				t.Errorf("non-stream: status %d: %s", whole.status, whole.body)
			case want != "error":
				if w := geminiWhole(t, whole.body); w.finish != want {
					t.Errorf("non-stream: finishReason %q, want %q", w.finish, want)
				}
			}
		})
	}
}

// TestGeminiUsageMetadata checks the token accounting a Gemini client
// reads: prompt tokens include the cached ones, candidates exclude the
// thoughts, and the total is their sum.
func TestGeminiUsageMetadata(t *testing.T) {
	up := upstreamNamed(t, "anthropic")
	res := exchange(t, geminiInbound(up.model.ID, false), up, geminiBody("tools"), okReply(up, toolsTurn))
	var c geminiChunk
	if err := json.Unmarshal(res.body, &c); err != nil {
		t.Fatal(err)
	}
	u := c.UsageMetadata
	// toolsTurn: input 25, cacheRead 100, cacheWrite 7, output 89, reasoning 40;
	// Anthropic reports no reasoning split, so all 89 are candidates.
	if u == nil || u.PromptTokenCount != 132 || u.CachedContentTokenCount != 100 || u.CandidatesTokenCount != 89 || u.TotalTokenCount != 221 {
		t.Errorf("usageMetadata %+v", u)
	}
	up = upstreamNamed(t, "google")
	res = exchange(t, geminiInbound(up.model.ID, false), up, geminiBody("tools"), okReply(up, toolsTurn))
	c = geminiChunk{}
	if err := json.Unmarshal(res.body, &c); err != nil {
		t.Fatal(err)
	}
	u = c.UsageMetadata
	// Gemini reports thoughts apart: 89 output = 49 candidates + 40 thoughts.
	if u == nil || u.PromptTokenCount != 125 || u.CachedContentTokenCount != 100 || u.CandidatesTokenCount != 49 || u.ThoughtsTokenCount != 40 || u.TotalTokenCount != 214 {
		t.Errorf("usageMetadata %+v", u)
	}
}

// TestGeminiForeignSignatureReplay: an Anthropic thinking signature reaches
// a Gemini client as base64 of its gateway token, and when the client
// replays the turn the Anthropic upstream gets its own signature back.
func TestGeminiForeignSignatureReplay(t *testing.T) {
	up := upstreamNamed(t, "anthropic")
	first := exchange(t, geminiInbound(up.model.ID, false), up, geminiBody("tools"), okReply(up, toolsTurn))
	var c struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(first.body, &c); err != nil {
		t.Fatal(err)
	}
	model := string(c.Candidates[0].Content)
	if strings.Contains(model, toolsTurn.signature) || !strings.Contains(model, `"thoughtSignature"`) {
		t.Fatalf("the Anthropic signature went out raw or not at all: %s", model)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"` + question + `"}]},` + model + `,
	 {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18°C"}}},
	  {"functionResponse":{"name":"get_weather","response":{"output":"22°C"}}}]}],
	 "tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":` + weatherSchema + `}]}],
	 "generationConfig":{"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}}`
	second := exchange(t, geminiInbound(up.model.ID, false), up, []byte(body), okReply(up, answerTurn))
	if second.status != 200 {
		t.Fatalf("replay: %d %s", second.status, second.body)
	}
	sent := string(second.up.body)
	if !strings.Contains(sent, `"signature":"`+toolsTurn.signature+`"`) {
		t.Errorf("the upstream did not get its signature back: %s", sent)
	}
	if !strings.Contains(sent, `"tool_use_id":"toolu_`) && !strings.Contains(sent, `"tool_use_id":"call_`) {
		t.Errorf("tool results not paired with their calls: %s", sent)
	}
}

// geminiErrorStatus is the status a Gemini client gets for an upstream
// status, and its google.rpc code name.
func geminiErrorStatus(status int) (int, string) {
	switch status {
	case 400, 413:
		return status, "INVALID_ARGUMENT"
	case 401:
		return 401, "UNAUTHENTICATED"
	case 403:
		return 403, "PERMISSION_DENIED"
	case 404:
		return 404, "NOT_FOUND"
	case 429:
		return 429, "RESOURCE_EXHAUSTED"
	case 503, 529:
		return 503, "UNAVAILABLE"
	}
	return status, "INTERNAL"
}

// TestGeminiUpstreamErrors: every upstream failure of the error table
// reaches a Gemini client as Google's error object with the mapped status
// and the upstream's own message, streaming or not.
func TestGeminiUpstreamErrors(t *testing.T) {
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := upstreamNamed(t, tc.upstream)
			for _, stream := range []bool{true, false} {
				res := exchange(t, geminiInbound(up.model.ID, stream), up, geminiBody("tools"), tc.reply)
				var e struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
						Status  string `json:"status"`
					} `json:"error"`
				}
				if err := json.Unmarshal(res.body, &e); err != nil {
					t.Fatalf("stream=%v: not an error object: %s", stream, res.body)
				}
				code, name := geminiErrorStatus(tc.status)
				if res.status != code || e.Error.Code != code || e.Error.Status != name || e.Error.Message != tc.message {
					t.Errorf("stream=%v: %d %s, want %d %s with %q", stream, res.status, res.body, code, name, tc.message)
				}
				if got := res.header.Get("Retry-After"); got != tc.retry {
					t.Errorf("stream=%v: Retry-After %q, want %q", stream, got, tc.retry)
				}
			}
		})
	}
}

// TestGeminiMidStreamErrors: after partial text the upstream fails; the
// Gemini stream ends with an error object and no finishReason, and the
// non-streaming client gets an error status.
func TestGeminiMidStreamErrors(t *testing.T) {
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			tn := turn{text: []string{"Partial ", "answer"}, failAfterText: true}
			res := exchange(t, geminiInbound(up.model.ID, true), up, geminiBody("tools"), okReply(up, tn))
			s := geminiStream(t, res.body)
			if !s.errored || s.finish != "" || s.text != "Partial answer" {
				t.Errorf("stream %+v:\n%s", s, res.body)
			}
			whole := exchange(t, geminiInbound(up.model.ID, false), up, geminiBody("tools"), okReply(up, tn))
			if whole.status < 500 || !strings.Contains(string(whole.body), `"status":"`) {
				t.Errorf("non-stream: status %d: %s", whole.status, whole.body)
			}
		})
	}
}
