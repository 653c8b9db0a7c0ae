package google

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestDecodeRequest(t *testing.T) {
	body := `{
 "systemInstruction":{"parts":[{"text":"Be terse."},{"text":"Use tools."}]},
 "contents":[
  {"role":"user","parts":[{"text":"Look"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]},
  {"role":"model","parts":[{"text":"plan","thought":true},{"thoughtSignature":"c2ln"},
   {"text":"Calling."},
   {"functionCall":{"name":"read","args":{"path":"a"}},"thoughtSignature":"Y2FsbA=="},
   {"functionCall":{"id":"own","name":"read","args":{"path":"b"}}}]},
  {"role":"user","parts":[
   {"functionResponse":{"id":"own","name":"read","response":{"output":"B"}}},
   {"functionResponse":{"name":"read","response":{"error":"no such file"}}},
   {"text":"and now?"}]}],
 "tools":[{"functionDeclarations":[{"name":"read","description":"Read a file",
   "parameters":{"type":"OBJECT","properties":{"path":{"type":"STRING"},"n":{"type":"INTEGER","nullable":true}},"required":["path"]}}]},
  {"googleSearch":{}}],
 "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["read"]}},
 "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],
 "generationConfig":{"temperature":0.2,"topP":0.9,"topK":40,"maxOutputTokens":100,"stopSequences":["END"],
  "thinkingConfig":{"thinkingBudget":4096,"includeThoughts":true},
  "responseMimeType":"application/json","responseSchema":{ "type": "OBJECT" }}}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.OriginAPI != llm.APIGoogle || len(req.System) != 2 || req.System[1].Text != "Use tools." {
		t.Errorf("system %+v", req.System)
	}
	if len(req.Messages) != 5 {
		t.Fatalf("%d messages, want user, assistant, two tool results, user", len(req.Messages))
	}
	user := req.Messages[0]
	if user.Role != llm.RoleUser || len(user.Content) != 2 || user.Content[1].Type != llm.ContentImage || user.Content[1].MimeType != "image/png" {
		t.Errorf("user %+v", user)
	}
	a := req.Messages[1]
	if a.Role != llm.RoleAssistant || a.API != llm.APIGoogle || len(a.Content) != 4 {
		t.Fatalf("assistant %+v", a)
	}
	if c := a.Content[0]; c.Type != llm.ContentThinking || c.Thinking != "plan" || c.ThinkingSignature != "c2ln" {
		t.Errorf("thinking %+v (a signature-only part signs the block before it)", c)
	}
	first, second := a.Content[2], a.Content[3]
	if first.ID == "" || first.Name != "read" || string(first.Arguments) != `{"path":"a"}` || first.ThoughtSignature() != "Y2FsbA==" {
		t.Errorf("first call %+v", first)
	}
	if second.ID != "own" {
		t.Errorf("second call id %q", second.ID)
	}
	r1, r2 := req.Messages[2], req.Messages[3]
	if r1.Role != llm.RoleToolResult || r1.ToolCallID != "own" || r1.IsError || r1.Content[0].Text != "B" {
		t.Errorf("result by id %+v", r1)
	}
	if r2.ToolCallID != first.ID || !r2.IsError || r2.Content[0].Text != "no such file" {
		t.Errorf("result by name %+v", r2)
	}
	if m := req.Messages[4]; m.Role != llm.RoleUser || m.Content[0].Text != "and now?" {
		t.Errorf("trailing user text %+v", m)
	}
	if len(req.Tools) != 2 {
		t.Fatalf("tools %+v", req.Tools)
	}
	if got := string(req.Tools[0].Parameters); got != `{"properties":{"n":{"type":["integer","null"]},"path":{"type":"string"}},"required":["path"],"type":"object"}` {
		t.Errorf("parameters %s", got)
	}
	if nt := req.Tools[1]; nt.NativeAPI != llm.APIGoogle || string(nt.Native) != `{"googleSearch":{}}` {
		t.Errorf("native tool %+v", nt)
	}
	if req.ToolChoice != (llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "read"}) {
		t.Errorf("tool choice %+v", req.ToolChoice)
	}
	if *req.Temperature != 0.2 || *req.TopP != 0.9 || *req.TopK != 40 || req.MaxTokens != 100 || req.StopSequences[0] != "END" {
		t.Errorf("sampling %+v", req)
	}
	if req.ThinkingBudget != 4096 || req.Reasoning != llm.EffortLow || req.HideThinkingSummary {
		t.Errorf("thinking budget %d effort %q hide %v", req.ThinkingBudget, req.Reasoning, req.HideThinkingSummary)
	}
	if string(req.Extra[ExtraResponseMimeType]) != `"application/json"` || string(req.Extra[ExtraResponseSchema]) != `{"type":"OBJECT"}` {
		t.Errorf("extra %s", req.Extra)
	}
	// A Gemini upstream gets the structured output settings back.
	out, err := BuildRequest(req, llm.Model{ID: "gemini-2.5-pro", Provider: "google", API: llm.APIGoogle, Reasoning: true}, Target{})
	if err != nil {
		t.Fatal(err)
	}
	if g := out.GenerationConfig; g == nil || g.ResponseMimeType != "application/json" || string(g.ResponseSchema) != `{"type":"OBJECT"}` {
		t.Errorf("generationConfig %+v", out.GenerationConfig)
	}
}

func TestDecodeRequestThinking(t *testing.T) {
	for _, tc := range []struct {
		config string
		effort llm.Effort
		off    bool
		hide   bool
		budget int
	}{
		{`{"thinkingBudget":0}`, "", true, false, 0},
		{`{"thinkingBudget":-1}`, llm.EffortMedium, false, false, 0},
		{`{"thinkingLevel":"LOW","includeThoughts":false}`, llm.EffortLow, false, true, 0},
		{`{"includeThoughts":true}`, llm.EffortMedium, false, false, 0},
		{`{"thinkingBudget":32768}`, llm.EffortHigh, false, false, 32768},
	} {
		req, err := DecodeRequest([]byte(`{"contents":[],"generationConfig":{"thinkingConfig":` + tc.config + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		if req.Reasoning != tc.effort || req.DisableReasoning != tc.off || req.HideThinkingSummary != tc.hide || req.ThinkingBudget != tc.budget {
			t.Errorf("%s: effort %q off %v hide %v budget %d", tc.config, req.Reasoning, req.DisableReasoning, req.HideThinkingSummary, req.ThinkingBudget)
		}
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"contents":`, "Invalid JSON payload"},
		{`{"contents":{}}`, `field "contents"`},
		{`{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, `contents[0].role: "system" is not a role`},
		{`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"AA"}}]}]}`, `"application/pdf" is not supported`},
		{`{"contents":[{"role":"user","parts":[{"functionCall":{"name":"f"}}]}]}`, `belongs in a "model" turn`},
		{`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":[1]}}]}]}`, "args must be an object"},
		{`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, `no functionCall named "f"`},
		{`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":"x"}}]}]}`, "response must be an object"},
		{`{"contents":[],"tools":[{"functionDeclarations":[{"description":"x"}]}]}`, "name is required"},
		{`{"contents":[],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`, `"SOMETIMES" is not a mode`},
		{`{"contents":[],"generationConfig":{"candidateCount":2}}`, "only 1 candidate"},
		{`{"contents":[],"cachedContent":"cachedContents/abc"}`, "cachedContent is not supported"},
		{`{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingLevel":"extreme"}}}`, `"extreme" is not a level`},
	} {
		_, err := DecodeRequest([]byte(tc.body))
		var ir *llm.InvalidRequestError
		if !errors.As(err, &ir) || !strings.Contains(ir.Message, tc.want) {
			t.Errorf("%s: error %v, want an invalid request saying %q", tc.body, err, tc.want)
		}
	}
}

// A foreign signature leaves as base64 of its gateway token and comes back
// as that token; a Gemini signature passes unchanged both ways.
func TestClientSignatureRoundTrip(t *testing.T) {
	an := &llm.Message{API: llm.APIAnthropic}
	out := clientSignatureOut(an, "EqQBsig")
	if strings.Contains(out, "EqQBsig") || strings.HasPrefix(out, llm.SignatureTokenPrefix) {
		t.Fatalf("foreign signature went out as %q", out)
	}
	tok := clientSignatureIn(out)
	if sig, api, ok := llm.DecodeSignatureToken(tok); !ok || api != llm.APIAnthropic || sig != "EqQBsig" {
		t.Errorf("came back as %q", tok)
	}
	ge := &llm.Message{API: llm.APIGoogle}
	if got := clientSignatureIn(clientSignatureOut(ge, "c2lnLWNhbGw=")); got != "c2lnLWNhbGw=" {
		t.Errorf("Gemini signature came back as %q", got)
	}
}

func TestAppendErrorBody(t *testing.T) {
	var e struct {
		Error struct {
			Code    int
			Message string
			Status  string
		}
	}
	if err := json.Unmarshal(AppendErrorBody(nil, 429, `quota "exceeded"`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || e.Error.Message != `quota "exceeded"` {
		t.Errorf("%+v", e)
	}
}

// FuzzDecodeRequest: any body decodes or is rejected as an invalid
// request, never a panic; a decoded tool result always names its call;
// and whatever the fast reader accepts, the fallback (snake_case keys
// renamed, then encoding/json) reads the same.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"text":"a\u00e9\ud800","thought":true,"thoughtSignature":"c2ln"},{"inlineData":{"mimeType":"image/png","data":"AA=="}},{"Text":"x"}]}],"Contents":[]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"a","text":"b"}]}],"safetySettings":[{"category":"X"}]}`))
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}},{"fileData":{"fileUri":"gs://x","mimeType":"image/png"}}]}],"cachedContent":"x"}`))
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}]}`))
	f.Add([]byte(`{"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"STRING"}}}}}]}]}`))
	f.Add([]byte(`{"generateContentRequest":{"contents":[]},"generationConfig":{"thinkingConfig":{"thinkingBudget":-1}}}`))
	f.Add([]byte(`{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"role":"model","parts":[{"function_call":{"name":"f","args":{"a_b":1}},"thought_signature":"c2ln"}]},{"parts":[{"function_response":{"name":"f","response":{"x_y":1}}},{"inline_data":{"mime_type":"image/png","data":"AA=="}},{"file_data":{"file_uri":"gs://x","mime_type":"image/png"}}]}]}`))
	f.Add([]byte(`{"tools":[{"function_declarations":[{"name":"f","parameters_json_schema":{"a_b":{}}}]}],"tool_config":{"function_calling_config":{"allowed_function_names":["f"]}},"generation_config":{"max_output_tokens":1,"thinking_config":{"include_thoughts":true}}}`))
	f.Add([]byte(`{"generation_config":{"top_k":1},"generationConfig":{"topK":2},"contents":[{"parts":[{"inlineData":{"mime_type":"a","mimeType":"b"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, plain inboundRequest
		if decodeInboundFast(body, &fast) {
			if err := decodeInboundPlain(body, &plain); err != nil {
				t.Fatalf("the fast reader accepted what the fallback refuses (%v): %q", err, body)
			}
			if !reflect.DeepEqual(fast, plain) {
				t.Fatalf("the readers differ on %q:\nfast  %+v\nplain %+v", body, fast, plain)
			}
		}
		req, err := DecodeRequest(body)
		if err != nil {
			var ir *llm.InvalidRequestError
			if !errors.As(err, &ir) {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		for _, m := range req.Messages {
			if m.Role == llm.RoleToolResult && m.ToolCallID == "" {
				t.Fatalf("tool result without a call id: %+v", m)
			}
		}
	})
}

// The JSON array form of streamGenerateContent is one valid array at the
// end of the stream, whether the turn finished or failed.
func TestStreamEncoderArray(t *testing.T) {
	for _, fail := range []bool{false, true} {
		m := &llm.Message{Role: llm.RoleAssistant, API: llm.APIAnthropic, Content: []llm.Content{llm.Text("Hello")}, Usage: llm.Usage{Input: 3, Output: 2}}
		events := []llm.Event{
			{Type: llm.EventStart, Partial: m},
			{Type: llm.EventTextStart, Partial: m},
			{Type: llm.EventTextDelta, Delta: "Hello", Partial: m},
			{Type: llm.EventTextEnd, Partial: m},
			{Type: llm.EventDone, Reason: llm.StopEnd, Partial: m},
		}
		m.StopReason = llm.StopEnd
		if fail {
			m.StopReason, m.ErrorMessage = llm.StopError, "overloaded"
			events[4] = llm.Event{Type: llm.EventError, Reason: llm.StopError, Partial: m,
				Err: &llm.UpstreamError{Status: 529, Message: "overloaded"}}
		}
		e := NewStreamEncoder("claude-x", "resp-1", true)
		var out []byte
		for i := range events {
			out = e.Encode(out, &events[i])
		}
		var chunks []map[string]json.RawMessage
		if err := json.Unmarshal(out, &chunks); err != nil {
			t.Fatalf("fail=%v: not one JSON array: %v\n%s", fail, err, out)
		}
		if len(chunks) != 2 {
			t.Fatalf("fail=%v: %d elements: %s", fail, len(chunks), out)
		}
		last := string(chunks[1]["error"])
		if fail && last != `{"code":503,"message":"overloaded","status":"UNAVAILABLE"}` {
			t.Errorf("error element %s", out)
		}
		if !fail && !strings.Contains(string(chunks[1]["candidates"]), `"finishReason":"STOP"`) {
			t.Errorf("last element %s", out)
		}
	}
}

// The fast reader takes what Gemini clients send (so it is the path that
// runs), and declines what only encoding/json reads exactly.
func TestFastReaderTakesTheUsualBodies(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool
	}{
		{`{"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]},
		  {"role":"model","parts":[{"text":"t","thought":true,"thoughtSignature":"c2ln"},{"functionCall":{"id":"a","name":"f","args":{"x":1}},"thoughtSignature":"c2ln"}]},
		  {"role":"user","parts":[{"functionResponse":{"id":"a","name":"f","response":{"output":"y"}}}]}],
		  "systemInstruction":{"role":"user","parts":[{"text":"sys"}]},
		  "tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}],
		  "toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},"safetySettings":[],"labels":{"a":"b"},
		  "generationConfig":{"temperature":1,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":-1}}}`, true},
		{`{"contents":[],"Contents":[]}`, false},
		{`{"contents":[{"parts":[{"text":null}]}]}`, false},
		{`{"contents":[{"parts":[{"text":"a","TEXT":"b"}]}]}`, false},
		{`{"generateContentRequest":{"contents":[]}}`, false},
		{`{"contents":[]} x`, false},
	} {
		var in inboundRequest
		if got := decodeInboundFast([]byte(tc.body), &in); got != tc.fast {
			t.Errorf("fast=%v, want %v: %s", got, tc.fast, tc.body)
		}
	}
}
