package google

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/ompgo/omp/internal/jsonr"
	"github.com/ompgo/omp/pkg/llm"
)

// Google's API reads request bodies with the protobuf JSON mapping, which
// accepts each field under its JSON name (lowerCamelCase) and under its
// proto name (snake_case): "system_instruction" is "systemInstruction".
// The inbound decoders read JSON names only, so a body first has its
// known snake_case keys renamed (normalizeKeys). Only the keys of the
// request's own messages are renamed; free-form values (functionCall
// args, a functionResponse's response, JSON schemas, labels) keep theirs.
// A body that names one field in both spellings is refused, as protobuf
// JSON parsers are recommended to do with a field given twice.

// message is one message type of the request: which of its members have
// a snake_case spelling, and which hold messages (or lists of them) whose
// keys are renamed too.
type message struct {
	name  string              // its JSON name, for error texts
	proto map[string]string   // proto name → JSON name, where they differ
	twice map[string]bool     // the JSON names that have a proto name
	sub   map[string]*message // JSON name → the message type of its value
}

// newMessage describes a message by the JSON names of its members and
// the members that hold messages.
func newMessage(name string, fields []string, sub map[string]*message) *message {
	m := &message{name: name, proto: map[string]string{}, twice: map[string]bool{}, sub: sub}
	for _, f := range fields {
		if p := protoName(f); p != f {
			m.proto[p] = f
			m.twice[f] = true
		}
	}
	return m
}

// protoName is the snake_case proto name of a lowerCamelCase JSON name.
func protoName(jsonName string) string {
	var b []byte
	for i := 0; i < len(jsonName); i++ {
		c := jsonName[i]
		if c >= 'A' && c <= 'Z' {
			b = append(b, '_', c+'a'-'A')
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// messageTypes are the request's message types. Members not listed keep
// their keys, which is right for every member whose value is free-form; a
// tool other than functionDeclarations goes to a Gemini upstream as it
// came, and Google reads either spelling inside it.
type messageTypes struct {
	request, content, part, blob, file, call, response *message
	tool, toolConfig, generation                       *message
}

// types returns the request's message types, built on first use.
var types = sync.OnceValue(func() *messageTypes {
	t := &messageTypes{}
	t.blob = newMessage("inlineData", []string{"mimeType", "data", "displayName"}, nil)
	t.file = newMessage("fileData", []string{"mimeType", "fileUri", "displayName"}, nil)
	t.call = newMessage("functionCall", []string{"id", "name", "args"}, nil)
	t.response = newMessage("functionResponse", []string{"id", "name", "response", "parts", "willContinue", "scheduling"},
		map[string]*message{"parts": newMessage("parts", []string{"inlineData", "fileData"},
			map[string]*message{"inlineData": t.blob, "fileData": t.file})})
	t.part = newMessage("parts", []string{"text", "thought", "thoughtSignature", "inlineData", "fileData",
		"functionCall", "functionResponse", "executableCode", "codeExecutionResult", "videoMetadata",
		"partMetadata", "mediaResolution"},
		map[string]*message{"inlineData": t.blob, "fileData": t.file, "functionCall": t.call,
			"functionResponse": t.response,
			"videoMetadata":    newMessage("videoMetadata", []string{"startOffset", "endOffset", "fps"}, nil)})
	t.content = newMessage("content", []string{"role", "parts"}, map[string]*message{"parts": t.part})
	declaration := newMessage("functionDeclarations", []string{"name", "description", "parameters",
		"parametersJsonSchema", "response", "responseJsonSchema", "behavior"}, nil)
	t.tool = newMessage("tools", []string{"functionDeclarations", "googleSearchRetrieval", "codeExecution",
		"googleSearch", "urlContext", "computerUse", "fileSearch", "googleMaps"},
		map[string]*message{"functionDeclarations": declaration})
	t.toolConfig = newMessage("toolConfig", []string{"functionCallingConfig", "retrievalConfig"},
		map[string]*message{"functionCallingConfig": newMessage("functionCallingConfig", []string{"mode", "allowedFunctionNames"}, nil)})
	t.generation = newMessage("generationConfig", []string{"temperature", "topP", "topK", "maxOutputTokens",
		"stopSequences", "candidateCount", "thinkingConfig", "responseMimeType", "responseSchema",
		"responseJsonSchema", "presencePenalty", "frequencyPenalty", "seed", "responseLogprobs", "logprobs",
		"enableEnhancedCivicAnswers", "responseModalities", "speechConfig", "mediaResolution", "imageConfig"},
		map[string]*message{"thinkingConfig": newMessage("thinkingConfig", []string{"includeThoughts", "thinkingBudget", "thinkingLevel"}, nil)})
	t.request = newMessage("request", []string{"model", "contents", "systemInstruction", "tools", "toolConfig",
		"generationConfig", "safetySettings", "cachedContent", "labels", "generateContentRequest"},
		map[string]*message{"contents": t.content, "systemInstruction": t.content, "tools": t.tool,
			"toolConfig": t.toolConfig, "generationConfig": t.generation})
	// countTokens wraps a whole generateContent request.
	t.request.sub["generateContentRequest"] = t.request
	return t
})

// keyEdit replaces the key literal at data[start:end] with name's.
type keyEdit struct {
	start, end int
	name       string
}

// normalizeKeys returns data with the proto-named keys of message m (a
// value of type m, or a list of them) renamed to their JSON names. It
// returns data itself when nothing is renamed, and also when data is not
// valid JSON: the decoder then reports that. A field given in both
// spellings is an *llm.InvalidRequestError.
func normalizeKeys(data []byte, m *message) ([]byte, error) {
	r := jsonr.NewReader(data)
	var edits []keyEdit
	if err := m.walk(r, &edits); err != nil {
		return nil, err
	}
	if r.End() != nil || len(edits) == 0 {
		return data, nil
	}
	out := make([]byte, 0, len(data)+len(edits)*4)
	at := 0
	for _, e := range edits {
		out = append(out, data[at:e.start]...)
		out = append(out, '"')
		out = append(out, e.name...)
		out = append(out, '"')
		at = e.end
	}
	return append(out, data[at:]...), nil
}

// walk reads one value of type m (an object, or a list of them) and
// records the keys to rename. A syntax error stops it without an error.
func (m *message) walk(r *jsonr.Reader, edits *[]keyEdit) error {
	switch r.Peek() {
	case '[':
		r.BeginArray()
		for r.More() {
			if err := m.walk(r, edits); err != nil {
				return err
			}
		}
		return nil
	case '{':
	default:
		r.Skip()
		return nil
	}
	r.BeginObject()
	// given holds the members with two spellings met so far: JSON name
	// and the spelling used.
	var given [][2]string
	for r.More() {
		start := r.Mark()
		key := r.Key()
		if r.Err() != nil {
			return nil
		}
		// name is set for a member with two spellings: its JSON name.
		name, renamed := m.proto[string(key)]
		if renamed {
			end := start + bytes.LastIndexByte(r.Since(start), '"') + 1
			*edits = append(*edits, keyEdit{start: start, end: end, name: name})
		} else if m.twice[string(key)] {
			name = string(key)
		}
		sub := m.sub[string(key)]
		if name != "" {
			for _, g := range given {
				if g[0] == name && g[1] != string(key) {
					return llm.InvalidRequestf("%s: %q and %q are the same field: send one of them", m.name, g[1], key)
				}
			}
			given = append(given, [2]string{name, string(key)})
			sub = m.sub[name]
		}
		if sub != nil {
			if err := sub.walk(r, edits); err != nil {
				return err
			}
			continue
		}
		r.Skip()
	}
	return nil
}

// unmarshalMessage decodes data, a value of type m, into v after
// renaming its proto-named keys.
func unmarshalMessage(data []byte, m *message, v any) error {
	if bytes.IndexByte(data, '_') >= 0 {
		var err error
		if data, err = normalizeKeys(data, m); err != nil {
			return err
		}
	}
	return json.Unmarshal(data, v)
}
