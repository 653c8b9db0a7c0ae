package google

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ompgo/omp/pkg/llm"
)

// outResponse is a GenerateContentResponse as the gateway answers it: the
// whole response of generateContent, or one chunk of
// streamGenerateContent.
type outResponse struct {
	Candidates    []outCandidate `json:"candidates"`
	UsageMetadata *outUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion,omitempty"`
	ResponseID    string         `json:"responseId,omitempty"`
}

type outCandidate struct {
	Content      outContent `json:"content"`
	FinishReason string     `json:"finishReason,omitempty"`
	Index        int        `json:"index"`
}

type outContent struct {
	Role  string    `json:"role"`
	Parts []outPart `json:"parts"`
}

// outPart is one response part. Text is a pointer so that a part may carry
// an empty text (the last chunk of a stream, a part that only signs).
type outPart struct {
	Text             *string       `json:"text,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	FunctionCall     *FunctionCall `json:"functionCall,omitempty"`
}

type outUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
}

func usageOf(u llm.Usage) *outUsage {
	return &outUsage{
		PromptTokenCount:        u.PromptTotal(),
		CandidatesTokenCount:    max(u.Output-u.Reasoning, 0),
		TotalTokenCount:         u.Total(),
		CachedContentTokenCount: u.CacheRead,
		ThoughtsTokenCount:      u.Reasoning,
	}
}

// FinishReason is the Gemini finishReason of a finished turn: a Gemini
// upstream's own reason unchanged, else STOP (tool calls too, as Gemini
// does), MAX_TOKENS, or SAFETY for another provider's refusal. ok is false
// for a turn that failed otherwise.
func FinishReason(m *llm.Message) (reason string, ok bool) {
	if m.Stop.Raw != "" && (m.Stop.API == llm.APIGoogle || m.Stop.API == llm.APIGeminiCLI) &&
		(m.StopReason.IsTerminalSuccess() || m.Stop.Safety) {
		return m.Stop.Raw, true
	}
	switch {
	case m.StopReason == llm.StopLength:
		return "MAX_TOKENS", true
	case m.StopReason.IsTerminalSuccess():
		return "STOP", true
	case m.StopReason == llm.StopError && m.Stop.Safety:
		return "SAFETY", true
	}
	return "", false
}

// clientSignatureOut is the thoughtSignature a Gemini client gets for a
// block of m: a Gemini API signature unchanged; any other provider's
// signature as its gateway token, base64 encoded because Gemini clients
// hold signatures as bytes. DecodeRequest reverses it.
func clientSignatureOut(m *llm.Message, sig string) string {
	if sig == "" {
		return ""
	}
	if m.API == llm.APIGoogle && !llm.IsSignatureToken(sig) {
		return sig
	}
	if !llm.IsSignatureToken(sig) {
		sig = llm.EncodeSignatureToken(m.API, sig)
	}
	return base64.StdEncoding.EncodeToString([]byte(sig))
}

func textPart(s string) outPart { return outPart{Text: &s} }

// blockParts appends the parts of one finished content block.
func blockParts(dst []outPart, m *llm.Message, c *llm.Content) []outPart {
	switch c.Type {
	case llm.ContentText:
		p := textPart(c.Text)
		p.ThoughtSignature = clientSignatureOut(m, c.TextSignature())
		return append(dst, p)
	case llm.ContentThinking:
		p := textPart(c.Thinking)
		p.Thought = true
		p.ThoughtSignature = clientSignatureOut(m, c.ThinkingSignature)
		return append(dst, p)
	case llm.ContentToolCall:
		return append(dst, callPart(m, c))
	}
	return dst
}

func callPart(m *llm.Message, c *llm.Content) outPart {
	return outPart{
		FunctionCall:     &FunctionCall{ID: c.ID, Name: c.Name, Args: c.PartialArguments()},
		ThoughtSignature: clientSignatureOut(m, c.ThoughtSignature()),
	}
}

// AppendResponse appends the generateContent answer of a finished turn.
// model is the model id the client asked for; id is the responseId when
// the upstream reported none. ok is false for a failed turn (other than a
// safety stop): the gateway answers with an error instead.
func AppendResponse(dst []byte, m *llm.Message, model, id string) ([]byte, bool) {
	reason, ok := FinishReason(m)
	if !ok {
		return dst, false
	}
	parts := make([]outPart, 0, len(m.Content))
	for i := range m.Content {
		parts = blockParts(parts, m, &m.Content[i])
	}
	if len(parts) == 0 {
		parts = append(parts, textPart(""))
	}
	if m.ResponseID != "" {
		id = m.ResponseID
	}
	out := outResponse{
		Candidates:    []outCandidate{{Content: outContent{Role: "model", Parts: parts}, FinishReason: reason}},
		UsageMetadata: usageOf(m.Usage), ModelVersion: model, ResponseID: id,
	}
	b, err := json.Marshal(out)
	if err != nil {
		return dst, false
	}
	return append(dst, b...), true
}

// StreamEncoder renders canonical events as streamGenerateContent chunks:
// SSE `data:` frames, or, for a client that did not ask for alt=sse, the
// elements of one JSON array written as they arrive.
type StreamEncoder struct {
	model, id string
	array     bool
	wrote     bool // an array element is out
	parts     []outPart
}

// NewStreamEncoder returns the encoder of one response; array selects the
// JSON array form.
func NewStreamEncoder(model, id string, array bool) *StreamEncoder {
	return &StreamEncoder{model: model, id: id, array: array}
}

// Encode appends what ev adds to the response: a chunk per text or
// thinking delta, one per finished tool call, a signature part when a
// signed block ends, and the last chunk (finishReason, usageMetadata) or an
// error object on the terminal event, which also closes the array.
func (e *StreamEncoder) Encode(dst []byte, ev *llm.Event) []byte {
	m := ev.Partial
	if m != nil && m.ResponseID != "" && e.id != m.ResponseID && !e.wrote {
		e.id = m.ResponseID
	}
	e.parts = e.parts[:0]
	switch ev.Type {
	case llm.EventTextDelta:
		if ev.Delta != "" {
			e.parts = append(e.parts, textPart(ev.Delta))
		}
	case llm.EventThinkingDelta:
		if ev.Delta != "" {
			p := textPart(ev.Delta)
			p.Thought = true
			e.parts = append(e.parts, p)
		}
	case llm.EventTextEnd:
		if c := ev.Block(); c != nil && c.TextSignature() != "" {
			p := textPart("")
			p.ThoughtSignature = clientSignatureOut(m, c.TextSignature())
			e.parts = append(e.parts, p)
		}
	case llm.EventThinkingEnd:
		if c := ev.Block(); c != nil && c.ThinkingSignature != "" {
			p := textPart("")
			p.Thought = true
			p.ThoughtSignature = clientSignatureOut(m, c.ThinkingSignature)
			e.parts = append(e.parts, p)
		}
	case llm.EventToolCallEnd:
		if c := ev.Block(); c != nil {
			e.parts = append(e.parts, callPart(m, c))
		}
	case llm.EventDone, llm.EventError:
		return e.finish(dst, ev)
	}
	if len(e.parts) == 0 {
		return dst
	}
	return e.chunk(dst, outResponse{
		Candidates:   []outCandidate{{Content: outContent{Role: "model", Parts: e.parts}}},
		ModelVersion: e.model, ResponseID: e.id,
	})
}

func (e *StreamEncoder) finish(dst []byte, ev *llm.Event) []byte {
	m := ev.Partial
	if m == nil {
		m = &llm.Message{StopReason: llm.StopError}
	}
	if reason, ok := FinishReason(m); ok {
		dst = e.chunk(dst, outResponse{
			Candidates:    []outCandidate{{Content: outContent{Role: "model", Parts: []outPart{textPart("")}}, FinishReason: reason}},
			UsageMetadata: usageOf(m.Usage), ModelVersion: e.model, ResponseID: e.id,
		})
	} else {
		code, msg := eventError(ev)
		dst = e.element(dst, AppendErrorBody(nil, code, msg))
	}
	if e.array {
		dst = append(dst, ']')
	}
	return dst
}

// eventError is the status and message of a failed stream.
func eventError(ev *llm.Event) (int, string) {
	msg := "Upstream request failed"
	if ev.Partial != nil && ev.Partial.ErrorMessage != "" {
		msg = ev.Partial.ErrorMessage
	}
	var ue *llm.UpstreamError
	if errors.As(ev.Err, &ue) && ue.Message != "" {
		msg = ue.Message
	}
	if errors.Is(ev.Err, context.Canceled) || (ev.Partial != nil && ev.Partial.StopReason == llm.StopAborted) {
		return 499, msg
	}
	return ClientStatus(llm.Classify(ev.Err).Status), msg
}

func (e *StreamEncoder) chunk(dst []byte, r outResponse) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		return dst
	}
	return e.element(dst, b)
}

// element appends one response object in the stream's framing.
func (e *StreamEncoder) element(dst, obj []byte) []byte {
	if !e.array {
		dst = append(dst, "data: "...)
		dst = append(dst, obj...)
		return append(dst, "\r\n\r\n"...)
	}
	if e.wrote {
		dst = append(dst, ",\r\n"...)
	} else {
		dst = append(dst, '[')
	}
	e.wrote = true
	return append(dst, obj...)
}

// ClientStatus is the HTTP status a Gemini client gets for a failure of
// status: Anthropic's 529 (overloaded), which Google's API never sends,
// is 503; the rest unchanged.
func ClientStatus(status int) int {
	if status == 529 {
		return http.StatusServiceUnavailable
	}
	return status
}

// ErrorStatus is the google.rpc.Code name Google's REST API gives an HTTP
// status.
func ErrorStatus(code int) string {
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 400 && code < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// AppendErrorBody appends Google's error envelope
// {"error":{"code","message","status"}}.
func AppendErrorBody(dst []byte, code int, message string) []byte {
	b, _ := json.Marshal(struct {
		Error apiErrorOut `json:"error"`
	}{apiErrorOut{Code: code, Message: message, Status: ErrorStatus(code)}})
	return append(dst, b...)
}

type apiErrorOut struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// CountTokens estimates the prompt tokens of a request without asking an
// upstream: about four characters a token for text and JSON, 258 tokens an
// image (Gemini's rate for a small image).
func CountTokens(req *llm.Request) int64 {
	var chars, images int64
	for _, s := range req.System {
		chars += int64(len(s.Text))
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		chars += int64(len(t.Name) + len(t.Description) + len(t.Parameters) + len(t.Native))
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			c := &req.Messages[i].Content[j]
			switch c.Type {
			case llm.ContentImage:
				images++
			case llm.ContentToolCall:
				chars += int64(len(c.Name) + len(c.Arguments))
			default:
				chars += int64(len(c.Text) + len(c.Thinking))
			}
		}
	}
	return (chars+3)/4 + images*258
}
