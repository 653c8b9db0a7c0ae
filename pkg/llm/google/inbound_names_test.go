package google

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// Each body in the snake_case spelling decodes as its camelCase twin, on
// the fast reader, on the encoding/json fallback and through
// DecodeRequest; a level at a time, so a missed name points at its level.
func TestDecodeRequestSnakeCase(t *testing.T) {
	for _, tc := range []struct{ name, snake, camel string }{
		{"request",
			`{"system_instruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],"safety_settings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`,
			`{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`},
		{"countTokens wrapper",
			`{"generate_content_request":{"model":"models/x","system_instruction":{"parts":[{"text":"S"}]},"contents":[{"parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":7}}}`,
			`{"generateContentRequest":{"model":"models/x","systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":7}}}`},
		{"part: inline_data, mime_type",
			`{"contents":[{"role":"user","parts":[{"text":"What is this?"},{"inline_data":{"mime_type":"image/jpeg","data":"AAAA"}}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/jpeg","data":"AAAA"}}]}]}`},
		{"part: file_data, file_uri",
			`{"contents":[{"parts":[{"file_data":{"mime_type":"image/png","file_uri":"https://example.com/a.png"}}]}]}`,
			`{"contents":[{"parts":[{"fileData":{"mimeType":"image/png","fileUri":"https://example.com/a.png"}}]}]}`},
		{"part: function_call, thought_signature, function_response and its parts",
			`{"contents":[{"role":"user","parts":[{"text":"weather?"}]},` +
				`{"role":"model","parts":[{"text":"plan","thought":true,"thought_signature":"c2ln"},{"function_call":{"id":"c1","name":"get_weather","args":{"city_name":"Paris","unit_system":"metric"}},"thought_signature":"Y2FsbA=="}]},` +
				`{"role":"user","parts":[{"function_response":{"id":"c1","name":"get_weather","response":{"temp_c":21,"wind_speed":3},"parts":[{"inline_data":{"mime_type":"image/png","data":"AAAA"}}],"will_continue":false}}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"weather?"}]},` +
				`{"role":"model","parts":[{"text":"plan","thought":true,"thoughtSignature":"c2ln"},{"functionCall":{"id":"c1","name":"get_weather","args":{"city_name":"Paris","unit_system":"metric"}},"thoughtSignature":"Y2FsbA=="}]},` +
				`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"temp_c":21,"wind_speed":3},"parts":[{"inlineData":{"mimeType":"image/png","data":"AAAA"}}],"willContinue":false}}]}]}`},
		{"tools: function_declarations, parameters_json_schema, other tools",
			`{"contents":[],"tools":[{"function_declarations":[{"name":"a","parameters_json_schema":{"type":"object","additional_properties":false}},{"name":"b","parameters":{"type":"OBJECT","properties":{"file_path":{"type":"STRING"}}}}]},{"google_search":{}},{"code_execution":{}}]}`,
			`{"contents":[],"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":{"type":"object","additional_properties":false}},{"name":"b","parameters":{"type":"OBJECT","properties":{"file_path":{"type":"STRING"}}}}]},{"googleSearch":{}},{"codeExecution":{}}]}`},
		{"tool_config: function_calling_config, allowed_function_names",
			`{"contents":[],"tools":[{"function_declarations":[{"name":"get_weather"}]}],"tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["get_weather"]}}}`,
			`{"contents":[],"tools":[{"functionDeclarations":[{"name":"get_weather"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}}`},
		{"generation_config and thinking_config",
			`{"contents":[],"generation_config":{"temperature":0.5,"top_p":0.9,"top_k":40,"max_output_tokens":800,"stop_sequences":["END"],"candidate_count":1,` +
				`"thinking_config":{"thinking_budget":1024,"include_thoughts":true},"response_mime_type":"application/json","response_schema":{"type":"OBJECT","property_ordering":["a"]},"response_json_schema":{"type":"object"}}}`,
			`{"contents":[],"generationConfig":{"temperature":0.5,"topP":0.9,"topK":40,"maxOutputTokens":800,"stopSequences":["END"],"candidateCount":1,` +
				`"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true},"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","property_ordering":["a"]},"responseJsonSchema":{"type":"object"}}}`},
		{"thinking_level",
			`{"contents":[],"generation_config":{"thinking_config":{"thinking_level":"LOW","include_thoughts":false}}}`,
			`{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingLevel":"LOW","includeThoughts":false}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want inboundRequest
			if err := decodeInboundPlain([]byte(tc.camel), &want); err != nil {
				t.Fatal(err)
			}
			var plain inboundRequest
			if err := decodeInboundPlain([]byte(tc.snake), &plain); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plain, want) {
				t.Errorf("fallback:\n got %+v\nwant %+v", plain, want)
			}
			var fast, fastCamel inboundRequest
			if decodeInboundFast([]byte(tc.camel), &fastCamel) {
				if !decodeInboundFast([]byte(tc.snake), &fast) {
					t.Fatal("the fast reader declines the snake_case body but reads the camelCase one")
				}
				if !reflect.DeepEqual(fast, want) {
					t.Errorf("fast reader:\n got %+v\nwant %+v", fast, want)
				}
			}
			got, err := DecodeRequest([]byte(tc.snake))
			if err != nil {
				t.Fatal(err)
			}
			wantReq, err := DecodeRequest([]byte(tc.camel))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantReq) {
				t.Errorf("DecodeRequest:\n got %+v\nwant %+v", got, wantReq)
			}
		})
	}
}

// The snake_case names reach the canonical request: a check on values,
// not only on agreement with the camelCase spelling.
func TestDecodeRequestSnakeCaseValues(t *testing.T) {
	body := `{"system_instruction":{"parts":[{"text":"You are a cat."}]},
 "contents":[{"role":"user","parts":[{"inline_data":{"mime_type":"image/jpeg","data":"AAAA"}},{"text":"Caption this."}]},
  {"role":"model","parts":[{"function_call":{"name":"find_theaters","args":{"movie_title":"Barbie"}}}]},
  {"role":"user","parts":[{"function_response":{"name":"find_theaters","response":{"output":"two"}}}]}],
 "tools":[{"function_declarations":[{"name":"find_theaters","parameters_json_schema":{"type":"object","properties":{"movie_title":{"type":"string"}}}}]}],
 "tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["find_theaters"]}},
 "generation_config":{"max_output_tokens":300,"top_p":0.5,"top_k":3,"stop_sequences":["x"],"thinking_config":{"thinking_budget":0},"response_mime_type":"text/plain"}}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.System) != 1 || req.System[0].Text != "You are a cat." {
		t.Errorf("system %+v", req.System)
	}
	if len(req.Messages) != 3 || len(req.Messages[0].Content) != 2 || req.Messages[0].Content[0].MimeType != "image/jpeg" {
		t.Fatalf("messages %+v", req.Messages)
	}
	call := req.Messages[1].Content[0]
	if call.Type != llm.ContentToolCall || call.Name != "find_theaters" || string(call.Arguments) != `{"movie_title":"Barbie"}` {
		t.Errorf("call %+v (args keep their own keys)", call)
	}
	if tr := req.Messages[2]; tr.Role != llm.RoleToolResult || tr.ToolCallID != call.ID || tr.Content[0].Text != "two" {
		t.Errorf("tool result %+v", tr)
	}
	if len(req.Tools) != 1 || !strings.Contains(string(req.Tools[0].Parameters), `"movie_title"`) {
		t.Errorf("tools %+v", req.Tools)
	}
	if req.ToolChoice.Mode != llm.ToolChoiceTool || req.ToolChoice.Name != "find_theaters" {
		t.Errorf("tool choice %+v", req.ToolChoice)
	}
	if req.MaxTokens != 300 || *req.TopP != 0.5 || *req.TopK != 3 || req.StopSequences[0] != "x" || !req.DisableReasoning {
		t.Errorf("generation %+v", req)
	}
	if string(req.Extra[ExtraResponseMimeType]) != `"text/plain"` {
		t.Errorf("extra %s", req.Extra)
	}
}

// A field given in both spellings is refused, whichever comes first and
// at whatever level; the same spelling twice is not this error.
func TestDecodeRequestBothSpellings(t *testing.T) {
	for _, body := range []string{
		`{"systemInstruction":{"parts":[{"text":"a"}]},"system_instruction":{"parts":[{"text":"b"}]}}`,
		`{"system_instruction":{"parts":[{"text":"a"}]},"contents":[],"systemInstruction":{"parts":[{"text":"b"}]}}`,
		`{"contents":[{"parts":[{"inline_data":{"mime_type":"image/png","mimeType":"image/gif","data":"AA=="}}]}]}`,
		`{"contents":[{"parts":[{"thoughtSignature":"YQ==","text":"x","thought_signature":"Yg=="}]}]}`,
		`{"generationConfig":{"max_output_tokens":1,"maxOutputTokens":2}}`,
		`{"generation_config":{"thinking_config":{"thinking_budget":1,"thinkingBudget":2}}}`,
		`{"tool_config":{"function_calling_config":{"mode":"ANY"},"functionCallingConfig":{"mode":"NONE"}}}`,
		`{"generate_content_request":{"contents":[],"cached_content":"a","cachedContent":"b"}}`,
	} {
		_, err := DecodeRequest([]byte(body))
		var ir *llm.InvalidRequestError
		if !errors.As(err, &ir) || !strings.Contains(ir.Message, "are the same field") {
			t.Errorf("%s: got %v, want the both-spellings error", body, err)
		}
	}
	if _, err := DecodeRequest([]byte(`{"contents":[{"parts":[{"text":"a"}]}],"generation_config":{"top_k":1},"generation_config":{"top_k":2}}`)); err != nil {
		t.Errorf("one spelling twice: %v", err)
	}
}

// Keys that only look like a field (another case, or a field of another
// level) are not renamed, on either path.
func TestDecodeRequestSnakeCaseStrict(t *testing.T) {
	body := []byte(`{"contents":[{"parts":[{"text":"x","Inline_Data":{"mime_type":"image/png","data":"AA=="},"max_output_tokens":3}]}],"SYSTEM_INSTRUCTION":{"parts":[{"text":"s"}]}}`)
	for name, decode := range map[string]func(*inboundRequest) bool{
		"fast":     func(in *inboundRequest) bool { return decodeInboundFast(body, in) },
		"fallback": func(in *inboundRequest) bool { return decodeInboundPlain(body, in) == nil },
	} {
		var in inboundRequest
		if !decode(&in) {
			t.Fatalf("%s: not decoded", name)
		}
		if in.SystemInstruction != nil || in.Contents[0].Parts[0].InlineData != nil {
			t.Errorf("%s: %+v", name, in)
		}
	}
}

func TestProtoName(t *testing.T) {
	for in, want := range map[string]string{"systemInstruction": "system_instruction", "parametersJsonSchema": "parameters_json_schema",
		"fileUri": "file_uri", "text": "text", "topK": "top_k"} {
		if got := protoName(in); got != want {
			t.Errorf("protoName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A Gemini Schema's keywords in snake_case reach other upstreams as JSON
// Schema keywords, at every depth; property names are names, not
// keywords, and keep their spelling.
func TestDecodeRequestSchemaSnakeCase(t *testing.T) {
	body := `{"contents":[],"tools":[{"function_declarations":[{"name":"f","parameters":{"type":"OBJECT",
 "property_ordering":["any_of","list"],"min_properties":1,
 "properties":{
  "any_of":{"type":"STRING","min_length":1,"max_length":9},
  "list":{"type":"ARRAY","min_items":1,"max_items":3,"items":{"any_of":[{"type":"STRING"},{"type":"OBJECT","max_properties":2}]}}}}}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(req.Tools[0].Parameters, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{"type":"object","propertyOrdering":["any_of","list"],"minProperties":1,
 "properties":{
  "any_of":{"type":"string","minLength":1,"maxLength":9},
  "list":{"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[{"type":"string"},{"type":"object","maxProperties":2}]}}}}`), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parameters %s", req.Tools[0].Parameters)
	}

	_, err = DecodeRequest([]byte(`{"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"ARRAY","max_items":1,"maxItems":2}}}}]}]}`))
	var ir *llm.InvalidRequestError
	if !errors.As(err, &ir) || ir.Message != `tools[0].functionDeclarations[0].parameters: "max_items" and "maxItems" are the same field: send one of them` {
		t.Errorf("both spellings in a schema: %v", err)
	}
}
