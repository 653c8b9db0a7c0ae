package google

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ompgo/omp/internal/jsonw"
	"github.com/ompgo/omp/pkg/llm"
)

var (
	flash25 = llm.Model{ID: "gemini-2.5-flash", Provider: "google", API: llm.APIGoogle, Reasoning: true,
		Input: []llm.Modality{llm.ModalityText, llm.ModalityImage}, MaxTokens: 65536,
		Thinking: &llm.Thinking{Mode: "budget"}}
	pro3 = llm.Model{ID: "gemini-3-pro-preview", Provider: "google", API: llm.APIGoogle, Reasoning: true,
		Input: []llm.Modality{llm.ModalityText, llm.ModalityImage}, Thinking: &llm.Thinking{Mode: "google-level"}}
)

// mustJSON encodes a request with AppendJSON after checking that it
// agrees with encoding/json on the struct tags.
func mustJSON(t *testing.T, r *GenerateContentRequest) string {
	t.Helper()
	fast := r.AppendJSON(nil)
	slow, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(fast, &a); err != nil {
		t.Fatalf("AppendJSON produced invalid JSON: %v\n%s", err, fast)
	}
	_ = json.Unmarshal(slow, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("AppendJSON disagrees with encoding/json\nfast %s\nslow %s", fast, slow)
	}
	return string(fast)
}

func toolTurn() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("weather and time?")}},
		{Role: llm.RoleAssistant, Provider: "google", Model: "gemini-3-pro-preview", StopReason: llm.StopToolUse,
			Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: "plan", ThinkingSignature: "c2ln"},
				{Type: llm.ContentToolCall, ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`), Extra: &llm.ContentExtra{ThoughtSignature: "Y2FsbA=="}},
				{Type: llm.ContentToolCall, ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{}`)},
			}},
		// Results arrive out of order; Gemini wants call order in one turn.
		{Role: llm.RoleToolResult, ToolCallID: "call_b", ToolName: "get_time", Content: []llm.Content{llm.Text("noon")}},
		{Role: llm.RoleToolResult, ToolCallID: "call_a", ToolName: "get_weather", IsError: true, Content: []llm.Content{llm.Text("down")}},
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("thanks")}},
	}
}

func TestBuildRequestToolTurn(t *testing.T) {
	req := &llm.Request{System: []llm.SystemBlock{{Text: "be brief"}, {Text: "  "}}, Messages: toolTurn()}
	got, err := BuildRequest(req, pro3, Target{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[` +
		`{"role":"user","parts":[{"text":"weather and time?"}]},` +
		`{"role":"model","parts":[{"text":"plan","thought":true,"thoughtSignature":"c2ln"},` +
		`{"thoughtSignature":"Y2FsbA==","functionCall":{"id":"call_a","name":"get_weather","args":{"city":"Paris"}}},` +
		`{"thoughtSignature":"` + skipSignature + `","functionCall":{"id":"call_b","name":"get_time","args":{}}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"call_a","name":"get_weather","response":{"error":"down"}}},` +
		`{"functionResponse":{"id":"call_b","name":"get_time","response":{"output":"noon"}}},{"text":"thanks"}]}],` +
		`"systemInstruction":{"parts":[{"text":"be brief"}]}}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("body\n got %s\nwant %s", s, want)
	}
}

func TestBuildRequestSignatures(t *testing.T) {
	msgs := toolTurn()
	tests := []struct {
		name  string
		model llm.Model
		t     Target
		from  string // provider of the history
		want  []string
		avoid []string
	}{
		{"same_model_replays_signatures", pro3, Target{}, "google", []string{`"thoughtSignature":"Y2FsbA=="`, `"thought":true`}, nil},
		{"foreign_history_gets_placeholder_on_every_call_api_key", pro3, Target{}, "anthropic",
			[]string{`"thoughtSignature":"` + skipSignature + `","functionCall":{"id":"call_a"`, `"thoughtSignature":"` + skipSignature + `","functionCall":{"id":"call_b"`, "```thinking\\nplan\\n```"},
			[]string{"Y2FsbA==", `"thought":true`}},
		{"code_assist_placeholder_on_first_call_only", llm.Model{ID: "gemini-3-pro-preview", Provider: "google-gemini-cli"}, Target{CodeAssist: true}, "anthropic",
			[]string{`"thoughtSignature":"` + skipSignature + `","functionCall":{"name":"get_weather"`, `{"functionCall":{"name":"get_time"`}, []string{`"id":"call_a"`}},
		{"gemini25_sends_no_placeholder_or_ids", flash25, Target{}, "anthropic", []string{`{"functionCall":{"name":"get_weather"`}, []string{skipSignature, `"id":`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := append([]llm.Message(nil), msgs...)
			m[1].Provider = tt.from
			got, err := BuildRequest(&llm.Request{Messages: m}, tt.model, tt.t)
			if err != nil {
				t.Fatal(err)
			}
			s := mustJSON(t, got)
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("missing %s in\n%s", w, s)
				}
			}
			for _, a := range tt.avoid {
				if strings.Contains(s, a) {
					t.Errorf("unexpected %s in\n%s", a, s)
				}
			}
		})
	}
}

func TestBuildRequestMissingResultIsSynthesized(t *testing.T) {
	m := toolTurn()
	m = append(m[:3], m[4]) // drop the result of call_a
	got, _ := BuildRequest(&llm.Request{Messages: m}, pro3, Target{})
	s := mustJSON(t, got)
	if !strings.Contains(s, `{"id":"call_a","name":"get_weather","response":{"error":"No result provided"}}`) {
		t.Errorf("no synthesized result:\n%s", s)
	}
}

func TestBuildRequestOptions(t *testing.T) {
	temp, topK := 0.5, 40
	tests := []struct {
		name string
		req  llm.Request
		m    llm.Model
		want string
	}{
		{"budget_from_effort", llm.Request{Reasoning: llm.EffortMedium, MaxTokens: 1000, Temperature: &temp, TopK: &topK},
			flash25, `"generationConfig":{"temperature":0.5,"topK":40,"maxOutputTokens":9192,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`},
		{"xhigh_is_model_max", llm.Request{Reasoning: llm.EffortXHigh}, flash25, `"thinkingBudget":24576`},
		{"explicit_budget_wins", llm.Request{ThinkingBudget: -1, HideThinkingSummary: true}, flash25,
			`"thinkingConfig":{"includeThoughts":false,"thinkingBudget":-1}`},
		{"disable_on_flash_is_zero", llm.Request{DisableReasoning: true}, flash25, `"thinkingConfig":{"includeThoughts":false,"thinkingBudget":0}`},
		{"level_medium_is_high", llm.Request{Reasoning: llm.EffortMedium}, pro3, `"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"high"}`},
		{"level_minimal_is_low", llm.Request{Reasoning: llm.EffortMinimal}, pro3, `"thinkingLevel":"low"`},
		{"stop_sequences_capped_at_5", llm.Request{StopSequences: []string{"1", "2", "3", "4", "5", "6"}}, flash25,
			`"stopSequences":["1","2","3","4","5"]`},
		{"tool_choice_named", llm.Request{Tools: []llm.Tool{{Name: "a"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "a"}}, flash25,
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["a"]}}`},
		{"tool_choice_none", llm.Request{Tools: []llm.Tool{{Name: "a"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}}, flash25,
			`"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`},
		{"tool_choice_required", llm.Request{Tools: []llm.Tool{{Name: "a"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}}, flash25,
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`},
		{"service_tier_flex", llm.Request{ServiceTier: "flex"}, flash25, `"serviceTier":"flex"`},
		{"image_inline_and_url", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{
			llm.Image("image/png", "AAAA"), {Type: llm.ContentImage, Extra: &llm.ContentExtra{URL: "https://x/y.png"}, MimeType: "image/png"}}}}},
			flash25, `"parts":[{"inlineData":{"mimeType":"image/png","data":"AAAA"}},{"fileData":{"mimeType":"image/png","fileUri":"https://x/y.png"}}]`},
		{"image_for_text_only_model", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Image("image/png", "AAAA")}}}},
			llm.Model{ID: "gemma-x", Provider: "google"}, `"parts":[{"text":"` + nonVisionPlaceholder + `"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuildRequest(&tt.req, tt.m, Target{})
			if err != nil {
				t.Fatal(err)
			}
			if s := mustJSON(t, got); !strings.Contains(s, tt.want) {
				t.Errorf("missing %s in\n%s", tt.want, s)
			}
		})
	}
}

func TestBuildRequestAntigravity(t *testing.T) {
	claude := llm.Model{ID: "claude-opus-4-6", RequestModelID: "claude-opus-4-6-thinking", Provider: "google-antigravity", Reasoning: true}
	req := &llm.Request{System: []llm.SystemBlock{{Text: "sys"}}, Tools: []llm.Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"]}`)}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("hi")}},
			{Role: llm.RoleAssistant, Provider: "other", Content: []llm.Content{{Type: llm.ContentThinking, Thinking: "unsigned"}, llm.Text("ok")}}}}
	got, err := BuildRequest(req, claude, Target{CodeAssist: true, Antigravity: true})
	if err != nil {
		t.Fatal(err)
	}
	s := mustJSON(t, got)
	for _, w := range []string{`"systemInstruction":{"role":"user","parts":[{"text":"sys"}]}`,
		`"parameters":{"type":"object","properties":{"x":{"type":"string"}}}`,
		`"toolConfig":{"functionCallingConfig":{"mode":"VALIDATED"}}`, `"maxOutputTokens":64000`} {
		if !strings.Contains(s, w) {
			t.Errorf("missing %s in\n%s", w, s)
		}
	}
	if strings.Contains(s, "unsigned") {
		t.Errorf("unsigned thinking should be dropped for Antigravity Claude:\n%s", s)
	}
}

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		name string
		in   string
		d    SchemaDialect
		want string
	}{
		{"strips_unsupported_and_spills", `{"$schema":"x","type":"object","additionalProperties":false,"properties":{"format":{"type":"string","format":"uri","minLength":1,"description":"d"}}}`,
			SchemaJSON, `{"type":"object","properties":{"format":{"type":"string","description":"d\n\n{format: \"uri\", minLength: 1}"}}}`},
		{"type_array_to_nullable", `{"type":"object","properties":{"a":{"type":["integer","null"]}}}`,
			SchemaJSON, `{"type":"object","properties":{"a":{"type":"integer","nullable":true}}}`},
		{"const_to_enum_and_bare_enum_typed", `{"type":"object","properties":{"a":{"const":"x"},"b":{"enum":["p","q"]}}}`,
			SchemaJSON, `{"type":"object","properties":{"a":{"enum":["x"],"type":"string"},"b":{"enum":["p","q"],"type":"string"}}}`},
		{"refs_inlined", `{"type":"object","$defs":{"P":{"type":"object","properties":{"n":{"type":"number"}}}},"properties":{"p":{"$ref":"#/$defs/P"}}}`,
			SchemaJSON, `{"type":"object","properties":{"p":{"type":"object","properties":{"n":{"type":"number"}}}}}`},
		{"root_anyof_merged", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			SchemaJSON, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`},
		{"object_gets_properties", `{"type":"object","properties":{"o":{"type":"object"}}}`,
			SchemaJSON, `{"type":"object","properties":{"o":{"type":"object","properties":{}}}}`},
		{"legacy_nullable_leaves_required", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]},"b":{"type":"string"}},"required":["a","b"]}`,
			SchemaLegacy, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}`},
		{"invalid_is_empty_object", `[1,2]`, SchemaJSON, `{"type":"object","properties":{}}`},
		{"empty_is_empty_object", ``, SchemaLegacy, `{"type":"object","properties":{}}`},
		{"non_string_enum_spilled", `{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`,
			SchemaJSON, `{"type":"object","properties":{"n":{"type":"integer","description":"{enum: [1,2]}"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(NormalizeSchema(json.RawMessage(tt.in), tt.d)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func FuzzNormalizeSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":["string","null"]}}}`), false)
	f.Add([]byte(`{"anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"$ref":"#/$defs/a"}}}`), true)
	f.Fuzz(func(t *testing.T, in []byte, legacy bool) {
		d := SchemaJSON
		if legacy {
			d = SchemaLegacy
		}
		out := normalizeSchema(in, d)
		if !json.Valid(out) {
			t.Fatalf("invalid output %s", out)
		}
	})
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain ascii text that is long enough")
	f.Add("quote\" back\\slash \n\t\x01 <&> \u2028 é 😀 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		var got, want string
		if err := json.Unmarshal(jsonw.Plain(nil, s), &got); err != nil {
			t.Fatalf("invalid JSON for %q: %v", s, err)
		}
		ref, _ := json.Marshal(s)
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q: got %q want %q", s, got, want)
		}
	})
}
