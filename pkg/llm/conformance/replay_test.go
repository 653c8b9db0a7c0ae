package conformance

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Reasoning replay and signatures: a client gets a
// turn from one upstream, sends it back, and the next upstream request
// carries the reasoning only when it returns to its issuer.

// firstTurn runs the first scenario non-streaming and returns the body.
func firstTurn(t *testing.T, in, up string) map[string]any {
	t.Helper()
	u := upstreamNamed(t, up)
	res := exchange(t, inboundNamed(t, in), u, []byte(toolsBodies2(in, u.model.ID, false)), okReply(u, toolsTurn))
	if res.status != 200 {
		t.Fatalf("first turn: %d %s", res.status, res.body)
	}
	var m map[string]any
	if err := json.Unmarshal(res.body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// secondTurn sends body to upstream up and returns the upstream request.
func secondTurn(t *testing.T, in, up, body string) map[string]any {
	t.Helper()
	u := upstreamNamed(t, up)
	res := exchange(t, inboundNamed(t, in), u, []byte(body), okReply(u, answerTurn))
	if res.status != 200 {
		t.Fatalf("second turn to %s: %d %s", up, res.status, res.body)
	}
	var m map[string]any
	if err := json.Unmarshal(res.up.body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// messagesReplay is an A body replaying content and answering its calls.
func messagesReplay(model string, content []any) string {
	var results []string
	for _, c := range content {
		if b := c.(map[string]any); b["type"] == "tool_use" {
			results = append(results, `{"type":"tool_result","tool_use_id":`+mustJSON(b["id"])+`,"content":"ok"}`)
		}
	}
	return `{"model":"` + model + `","max_tokens":4096,"stream":false,"thinking":{"type":"enabled","budget_tokens":2048},
"messages":[{"role":"user","content":"` + question + `"},{"role":"assistant","content":` + mustJSON(content) + `},
{"role":"user","content":[` + strings.Join(results, ",") + `]}]}`
}

// responsesReplay is an R body replaying output items and their outputs.
func responsesReplay(model string, output []any) string {
	items := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + question + `"}]}`}
	for _, o := range output {
		items = append(items, mustJSON(o))
		if it := o.(map[string]any); it["type"] == "function_call" {
			items = append(items, `{"type":"function_call_output","call_id":`+mustJSON(it["call_id"])+`,"output":"ok"}`)
		}
	}
	return `{"model":"` + model + `","stream":false,"store":false,"include":["reasoning.encrypted_content"],"input":[` + strings.Join(items, ",") + `]}`
}

// anthropicSignatures lists the thinking signatures of an AN request.
func anthropicSignatures(body map[string]any) []string {
	var out []string
	for _, m := range body["messages"].([]any) {
		if content, ok := m.(map[string]any)["content"].([]any); ok {
			for _, c := range content {
				if b := c.(map[string]any); b["type"] == "thinking" {
					out = append(out, b["signature"].(string))
				}
			}
		}
	}
	return out
}

// reasoningItems lists the reasoning items of an OR/CX request.
func reasoningItems(body map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range body["input"].([]any) {
		if m := it.(map[string]any); m["type"] == "reasoning" {
			out = append(out, m)
		}
	}
	return out
}

// geminiSignatures lists the thoughtSignatures of a GE/GC request.
func geminiSignatures(body map[string]any) []string {
	if r, ok := body["request"].(map[string]any); ok {
		body = r
	}
	var out []string
	for _, c := range body["contents"].([]any) {
		for _, p := range c.(map[string]any)["parts"].([]any) {
			if s, ok := p.(map[string]any)["thoughtSignature"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func token(issuer, payload string) string {
	return "gw1." + issuer + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
}

// Case 31: Anthropic thinking reaches a Responses client as a reasoning
// item whose encrypted_content is a gateway token, and comes back to
// Anthropic as the original signed block, never to OpenAI.
func TestReasoningAnthropicToResponsesClient(t *testing.T) {
	resp := firstTurn(t, "responses", "anthropic")
	out := resp["output"].([]any)
	rs := out[0].(map[string]any)
	if rs["type"] != "reasoning" || rs["encrypted_content"] != token("an", toolsTurn.signature) {
		t.Fatalf("reasoning item: %v", rs)
	}
	if s := rs["summary"].([]any); len(s) != 1 || s[0].(map[string]any)["type"] != "summary_text" {
		t.Errorf("summary: %v", s)
	}
	kinds := []string{}
	for _, o := range out {
		kinds = append(kinds, o.(map[string]any)["type"].(string))
	}
	if !slices.Equal(kinds, []string{"reasoning", "message", "function_call", "function_call"}) {
		t.Errorf("output items %v", kinds)
	}
	body := responsesReplay("claude-sonnet-4-5", out)
	if got := anthropicSignatures(secondTurn(t, "responses", "anthropic", body)); !slices.Equal(got, []string{toolsTurn.signature}) {
		t.Errorf("replay to Anthropic: signatures %q, want the original", got)
	}
	if got := reasoningItems(secondTurn(t, "responses", "openai-responses", body)); len(got) != 0 {
		t.Errorf("Anthropic reasoning reached OpenAI: %v", got)
	}
	if got := geminiSignatures(secondTurn(t, "responses", "google", body)); len(got) != 0 {
		t.Errorf("Anthropic signature reached Gemini: %v", got)
	}
}

// Case 32: OpenAI reasoning reaches an Anthropic client as a thinking
// block whose signature is a gateway token holding the reasoning item;
// it is restored only for the issuing upstream.
func TestReasoningResponsesToAnthropicClient(t *testing.T) {
	for _, tc := range []struct{ up, issuer, other string }{
		{"openai-responses", "or", "openai-codex"},
		{"openai-codex", "cx", "openai-responses"},
	} {
		t.Run(tc.up, func(t *testing.T) {
			msg := firstTurn(t, "messages", tc.up)
			content := msg["content"].([]any)
			th := content[0].(map[string]any)
			sig, _ := th["signature"].(string)
			if th["type"] != "thinking" || !strings.HasPrefix(sig, "gw1."+tc.issuer+".") {
				t.Fatalf("thinking block: %v", th)
			}
			body := messagesReplay("m", content)
			items := reasoningItems(secondTurn(t, "messages", tc.up, body))
			if len(items) != 1 || items[0]["encrypted_content"] != toolsTurn.signature {
				t.Fatalf("replay to the issuer: reasoning items %v", items)
			}
			if tc.up == "openai-responses" && items[0]["id"] != "rs_up_1" {
				t.Errorf("restored item id %v, want rs_up_1", items[0]["id"])
			}
			if tc.up == "openai-codex" && items[0]["id"] != nil {
				t.Errorf("Codex replay keeps the item id %v", items[0]["id"])
			}
			if got := reasoningItems(secondTurn(t, "messages", tc.other, body)); len(got) != 0 {
				t.Errorf("reasoning restored for another issuer: %v", got)
			}
			if got := anthropicSignatures(secondTurn(t, "messages", "anthropic", body)); len(got) != 0 {
				t.Errorf("a foreign token reached Anthropic as a signed block: %v", got)
			}
		})
	}
}

// Case 32, second half: a reasoning item with only a signature still
// yields one thinking block carrying it.
func TestSignatureOnlyReasoningYieldsThinkingBlock(t *testing.T) {
	up := upstreamNamed(t, "openai-responses")
	tn := turn{signature: "enc-only", text: []string{"Hi."}}
	res := exchange(t, inboundNamed(t, "messages"), up, []byte(toolsBodies2("messages", up.model.ID, false)), okReply(up, tn))
	var msg map[string]any
	if err := json.Unmarshal(res.body, &msg); err != nil {
		t.Fatal(err)
	}
	th := msg["content"].([]any)[0].(map[string]any)
	if th["type"] != "thinking" || th["thinking"] != "" || !strings.HasPrefix(th["signature"].(string), "gw1.or.") {
		t.Errorf("signature-only reasoning: %v", th)
	}
	streamed := exchange(t, inboundNamed(t, "messages"), up, []byte(toolsBodies2("messages", up.model.ID, true)), okReply(up, tn))
	checkStream(t, "messages", streamed.body, true)
	if n := strings.Count(string(streamed.body), `"signature_delta"`); n != 1 {
		t.Errorf("%d signature_delta, want 1", n)
	}
}

// Case 49: prior Anthropic thinking is forwarded unchanged, unsigned
// thinking is dropped, and another provider's reasoning is never sent as
// a signed block.
func TestAnthropicThinkingReplay(t *testing.T) {
	content := []any{
		map[string]any{"type": "thinking", "thinking": "signed", "signature": "EqQBsig-an"},
		map[string]any{"type": "thinking", "thinking": "unsigned", "signature": ""},
		map[string]any{"type": "thinking", "thinking": "from gemini", "signature": token("ge", "c2ln")},
		map[string]any{"type": "redacted_thinking", "data": "EmwKAhgB"},
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
	}
	body := secondTurn(t, "messages", "anthropic", messagesReplay("m", content))
	if got := anthropicSignatures(body); !slices.Equal(got, []string{"EqQBsig-an"}) {
		t.Errorf("signatures forwarded: %q", got)
	}
	if !strings.Contains(mustJSON(body), `"redacted_thinking"`) {
		t.Errorf("redacted_thinking was not forwarded")
	}
}

// Case 50: a Gemini thoughtSignature goes back only to Gemini, on the part
// it came with; tokens of other issuers and raw foreign signatures never
// reach it.
func TestGeminiSignatureReplay(t *testing.T) {
	t.Run("anthropic_client", func(t *testing.T) {
		msg := firstTurn(t, "messages", "google")
		content := msg["content"].([]any)
		if sig := content[0].(map[string]any)["signature"]; sig != token("ge", toolsTurn.signature) {
			t.Fatalf("thinking signature %v", sig)
		}
		body := messagesReplay("gemini-2.5-pro", content)
		if got := geminiSignatures(secondTurn(t, "messages", "google", body)); !slices.Equal(got, []string{toolsTurn.signature}) {
			t.Errorf("replay to Gemini: %q", got)
		}
		for _, other := range []string{"google-gemini-cli", "anthropic"} {
			b := secondTurn(t, "messages", other, body)
			if strings.Contains(mustJSON(b), toolsTurn.signature) {
				t.Errorf("Gemini signature reached %s: %s", other, mustJSON(b))
			}
		}
	})
	t.Run("responses_client", func(t *testing.T) {
		resp := firstTurn(t, "responses", "google")
		body := responsesReplay("gemini-2.5-pro", resp["output"].([]any))
		if got := geminiSignatures(secondTurn(t, "responses", "google", body)); !slices.Equal(got, []string{toolsTurn.signature}) {
			t.Errorf("replay to Gemini: %q", got)
		}
		if got := reasoningItems(secondTurn(t, "responses", "openai-responses", body)); len(got) != 0 {
			t.Errorf("Gemini reasoning reached OpenAI: %v", got)
		}
	})
	t.Run("anthropic_signature_never_reaches_gemini", func(t *testing.T) {
		content := []any{
			map[string]any{"type": "thinking", "thinking": "x", "signature": "c2lnLWFudGhyb3BpYw=="},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{}},
		}
		for _, up := range []string{"google", "google-gemini-cli"} {
			if got := geminiSignatures(secondTurn(t, "messages", up, messagesReplay("m", content))); slices.Contains(got, "c2lnLWFudGhyb3BpYw==") {
				t.Errorf("%s got the Anthropic signature: %q", up, got)
			}
		}
	})
}
