// Package rpc is `omp --mode rpc`: the JSON-lines protocol over stdin
// and stdout. It holds the command and response frames, the Model object
// the protocol reports, the one stdout writer with its frame size limits,
// and the server (Serve) that reads commands and drives the agent; the
// program running it supplies model switching and credentials through a
// Host.
package rpc

import (
	"cmp"
	"encoding/json"

	"github.com/ompgo/omp/pkg/llm"
)

// Transport limits: one frame is at most MaxFrame bytes; a host may
// reassemble a split frame up to MaxReassembly bytes.
const (
	MaxFrame      = 1 << 20
	MaxReassembly = 64 << 20
)

// Command is one stdin command: the union of every command's fields.
type Command struct {
	ID                 *string         `json:"id"`
	Type               string          `json:"type"`
	Message            string          `json:"message"`
	Images             []llm.Content   `json:"images"`
	StreamingBehavior  string          `json:"streamingBehavior"`
	Provider           string          `json:"provider"`
	ModelID            string          `json:"modelId"`
	Level              string          `json:"level"`
	Mode               string          `json:"mode"`
	CustomInstructions string          `json:"customInstructions"`
	Enabled            *bool           `json:"enabled"`
	Command            string          `json:"command"`
	ParentSession      string          `json:"parentSession"`
	SessionPath        string          `json:"sessionPath"`
	EntryID            string          `json:"entryId"`
	Name               *string         `json:"name"`
	OutputPath         string          `json:"outputPath"`
	ProtocolVersion    json.RawMessage `json:"protocolVersion"`
	SessionDir         string          `json:"sessionDir"`
	Since              *string         `json:"since"`
	Events             json.RawMessage `json:"events"` // a list of strings, or null
	Cursor             *string         `json:"cursor"`
	Limit              *float64        `json:"limit"`
}

// Response is a response frame; Data is omitted when nil (Null answers
// with an explicit `data:null`).
type Response struct {
	ID      *string `json:"id,omitempty"`
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Success bool    `json:"success"`
	Data    any     `json:"data,omitempty"`
	Error   string  `json:"error,omitempty"`
	Code    string  `json:"code,omitempty"`
}

// nullResponse is a successful response whose data is null.
type nullResponse struct {
	ID      *string `json:"id,omitempty"`
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Success bool    `json:"success"`
	Data    any     `json:"data"`
}

// OK is a successful response to command id, with data unless it is nil.
func OK(id *string, command string, data any) any {
	if data == nil {
		return &Response{ID: id, Type: "response", Command: command, Success: true}
	}
	return &Response{ID: id, Type: "response", Command: command, Success: true, Data: data}
}

// Null is a successful response to command id with `data:null`.
func Null(id *string, command string) any {
	return &nullResponse{ID: id, Type: "response", Command: command, Success: true}
}

// Error is a failed response to command id.
func Error(id *string, command, msg string) any {
	return &Response{ID: id, Type: "response", Command: command, Success: false, Error: msg}
}

// ErrorCode is a failed response to command id whose failure has a
// machine-readable code.
func ErrorCode(id *string, command, msg, code string) any {
	return &Response{ID: id, Type: "response", Command: command, Success: false, Error: msg, Code: code}
}

// Model is the protocol's Model object; it never carries the model's
// headers, which may hold secrets.
type Model struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	API           string          `json:"api"`
	Provider      string          `json:"provider"`
	BaseURL       string          `json:"baseUrl"`
	Reasoning     bool            `json:"reasoning"`
	Input         []llm.Modality  `json:"input"`
	Cost          llm.Price       `json:"cost"`
	ContextWindow int             `json:"contextWindow"`
	MaxTokens     int             `json:"maxTokens"`
	Compat        json.RawMessage `json:"compat,omitempty"`
}

// ModelOf is m as the protocol reports it: the name defaults to the id and
// the input modalities to text.
func ModelOf(m llm.Model) Model {
	in := m.Input
	if in == nil {
		in = []llm.Modality{llm.ModalityText}
	}
	return Model{ID: m.ID, Name: cmp.Or(m.Name, m.ID), API: m.API, Provider: m.Provider, BaseURL: m.BaseURL,
		Reasoning: m.Reasoning, Input: in, Cost: m.Cost, ContextWindow: m.ContextWindow, MaxTokens: m.MaxTokens,
		Compat: m.Compat}
}
