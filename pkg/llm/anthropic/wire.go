// Package anthropic speaks the Anthropic Messages API: an upstream
// llm.Provider (API key or Claude OAuth), and the inbound codec the gateway
// uses for POST /v1/messages (request decoding, streaming and non-streaming
// response encoding, error envelopes).
package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
)

type wireCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

// wireBlock is one content block (a flat union over the block types).
type wireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Source       *wireSource     `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      blocks          `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl *wireCache      `json:"cache_control"`

	// raw is the verbatim block for types without a canonical slot.
	raw json.RawMessage
}

type plainBlock wireBlock

// UnmarshalJSON decodes a block, keeping the raw JSON of block types that
// have no canonical slot.
func (b *wireBlock) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, (*plainBlock)(b)); err != nil {
		return err
	}
	switch b.Type {
	case "text", "tool_use", "tool_result", "thinking", "redacted_thinking":
	case "image":
		if b.Source == nil || (b.Source.Type != "base64" && b.Source.Type != "url") {
			b.raw = slices.Clone(data)
		}
	default:
		b.raw = slices.Clone(data)
	}
	return nil
}

// blocks is a content field that is either a string or an array of blocks.
type blocks []wireBlock

// UnmarshalJSON accepts a string (one text block) or an array of blocks.
func (bs *blocks) UnmarshalJSON(data []byte) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*bs = blocks{{Type: "text", Text: s}}
		return nil
	}
	if bytes.Equal(data, []byte("null")) {
		*bs = nil
		return nil
	}
	return json.Unmarshal(data, (*[]wireBlock)(bs))
}

// wireUsage is the usage object of responses and stream events.
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// wireError is the error object of error bodies and error events.
type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireEvent is one upstream stream event (decoded by data.type).
type wireEvent struct {
	Type         string       `json:"type"`
	Message      *wireMessage `json:"message"`
	Index        int          `json:"index"`
	ContentBlock *wireBlock   `json:"content_block"`
	Delta        *wireDelta   `json:"delta"`
	Usage        *wireUsage   `json:"usage"`
	Error        *wireError   `json:"error"`
}

// wireMessage is the message of a message_start event (the fields the
// stream uses).
type wireMessage struct {
	ID    string     `json:"id"`
	Model string     `json:"model"`
	Usage *wireUsage `json:"usage"`
}

// wireDelta is the delta of a content_block_delta or message_delta event.
type wireDelta struct {
	Type         string  `json:"type"`
	Text         string  `json:"text"`
	PartialJSON  string  `json:"partial_json"`
	Thinking     string  `json:"thinking"`
	Signature    string  `json:"signature"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}
