package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/ompgo/omp/tools/benchcpu"
)

// DecodeChatRequest and DecodeResponsesRequest (one pass on jsonr,
// straight to the canonical request) against encoding/json on the real
// workload: agentChatBody (~300 KB, 300-message agent session; the same
// session as a Responses body) and the request goldens in testdata.
//
// The package has no encoding/json decoder of requests to compare with, so
// impl=encoding_json is a lower bound of one: json.Unmarshal into a mirror
// of the wire types (content as string-or-parts, schemas kept raw),
// without the conversion to llm.Request or any validation. The decision
// these numbers back is in pkg/llm's doc
// (Hand-written JSON).
//
//	go test -run '^$' -bench 'Decode(Chat|Responses)RequestJSON' -count 6 ./pkg/llm/openai/ > new.txt
//	benchstat -col /impl new.txt
func BenchmarkDecodeChatRequestJSON(b *testing.B) {
	benchDecodeRequest(b, agentChatBody(b), "testdata/request_chat.json", func(body []byte) error {
		_, err := DecodeChatRequest(body)
		return err
	}, func(body []byte) error { var r ejChatRequest; return json.Unmarshal(body, &r) })
}

func BenchmarkDecodeResponsesRequestJSON(b *testing.B) {
	req, err := DecodeChatRequest(agentChatBody(b))
	if err != nil {
		b.Fatal(err)
	}
	benchDecodeRequest(b, AppendResponsesBody(nil, req, benchModel), "testdata/request_responses.json", func(body []byte) error {
		_, err := DecodeResponsesRequest(body)
		return err
	}, func(body []byte) error { var r ejResponsesRequest; return json.Unmarshal(body, &r) })
}

// benchDecodeRequest runs fast and ej (the encoding/json baseline) on
// both workloads.
func benchDecodeRequest(b *testing.B, agent []byte, goldenPath string, fast, ej func([]byte) error) {
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		body []byte
	}{{"agent300", agent}, {"golden", golden}} {
		for _, impl := range []struct {
			name   string
			decode func([]byte) error
		}{{"fast", fast}, {"encoding_json", ej}} {
			b.Run("workload="+w.name+"/impl="+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(w.body)))
				b.ReportAllocs()
				stop := benchcpu.Start(b)
				for b.Loop() {
					if err := impl.decode(w.body); err != nil {
						b.Fatal(err)
					}
				}
				stop()
			})
		}
	}
}

type ejChatRequest struct {
	Model               string          `json:"model"`
	Stream              bool            `json:"stream"`
	StreamOptions       json.RawMessage `json:"stream_options"`
	Messages            []ejChatMessage `json:"messages"`
	Tools               []ejChatTool    `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Stop                json.RawMessage `json:"stop"`
}

type ejChatMessage struct {
	Role             string      `json:"role"`
	Content          ejChatParts `json:"content"`
	Name             string      `json:"name"`
	ToolCallID       string      `json:"tool_call_id"`
	ReasoningContent string      `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type ejChatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type ejChatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// ejChatParts is a string or an array of parts.
type ejChatParts []ejChatPart

func (p *ejChatParts) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = ejChatParts{{Type: "text", Text: s}}
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, (*[]ejChatPart)(p))
}

type ejResponsesRequest struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions"`
	Stream          bool            `json:"stream"`
	Store           *bool           `json:"store"`
	Include         []string        `json:"include"`
	Input           ejRespInput     `json:"input"`
	Tools           json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
	Reasoning       json.RawMessage `json:"reasoning"`
	Text            json.RawMessage `json:"text"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	ClientMetadata  json.RawMessage `json:"client_metadata"`
	PromptCacheKey  string          `json:"prompt_cache_key"`
}

type ejRespItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          ejRespParts     `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Input            string          `json:"input"`
	Output           json.RawMessage `json:"output"`
	Status           string          `json:"status"`
	EncryptedContent string          `json:"encrypted_content"`
	Summary          []ejChatPart    `json:"summary"`
}

// ejRespInput is a string or an array of items.
type ejRespInput []ejRespItem

func (in *ejRespInput) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*in = ejRespInput{{Role: "user", Content: ejRespParts{{Type: "input_text", Text: s}}}}
		return nil
	}
	return json.Unmarshal(b, (*[]ejRespItem)(in))
}

type ejRespPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
}

// ejRespParts is a string or an array of parts.
type ejRespParts []ejRespPart

func (p *ejRespParts) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = ejRespParts{{Type: "input_text", Text: s}}
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, (*[]ejRespPart)(p))
}
