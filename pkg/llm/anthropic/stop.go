package anthropic

import (
	"errors"

	"github.com/ompgo/omp/pkg/llm"
)

// StopFromWire maps an Anthropic stop_reason to the canonical reason and
// detail. Unknown values are a normal stop.
func StopFromWire(raw string, sequence string) (llm.StopReason, llm.StopDetail) {
	d := llm.StopDetail{Raw: raw, API: llm.APIAnthropic, Sequence: sequence}
	switch raw {
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopLength, d
	case "tool_use":
		return llm.StopToolUse, d
	case "refusal":
		d.Safety = true
		return llm.StopError, d
	}
	return llm.StopEnd, d
}

// StopToWire maps a canonical end to an Anthropic stop_reason and
// stop_sequence: raw values pass through only when
// they came from Anthropic; the safety class becomes refusal.
func StopToWire(reason llm.StopReason, d llm.StopDetail) (stopReason, stopSequence string) {
	switch reason {
	case llm.StopLength:
		if d.API == llm.APIAnthropic && d.Raw == "model_context_window_exceeded" {
			return d.Raw, ""
		}
		return "max_tokens", ""
	case llm.StopToolUse:
		return "tool_use", ""
	case llm.StopError, llm.StopAborted:
		if d.Safety {
			return "refusal", ""
		}
		return "end_turn", ""
	}
	if d.Sequence != "" {
		return "stop_sequence", d.Sequence
	}
	if d.API == llm.APIAnthropic && d.Raw == "pause_turn" {
		return "pause_turn", ""
	}
	return "end_turn", ""
}

// messageStop is StopToWire for the message m ends with (nil when there
// is none): a message that carries a client tool call stops with tool_use
// unless the output limit cut it, whatever the upstream's reason was, so
// that the client runs the calls.
func messageStop(reason llm.StopReason, m *llm.Message) (stopReason, stopSequence string) {
	var d llm.StopDetail
	if m != nil {
		d = m.Stop
	}
	stopReason, stopSequence = StopToWire(reason, d)
	if reason == llm.StopLength || m == nil {
		return stopReason, stopSequence
	}
	for i := range m.Content {
		if m.Content[i].Type == llm.ContentToolCall {
			return "tool_use", ""
		}
	}
	return stopReason, stopSequence
}

// ErrorType returns the Anthropic error type for an HTTP status.
func ErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 499:
		return "request_aborted"
	case 503, 529:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

// anthropicTypes are the error types an Anthropic upstream reports that
// can be forwarded verbatim.
var anthropicTypes = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
	"permission_error": 403, "not_found_error": 404, "request_too_large": 413,
	"rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}

// ErrorStatus returns the HTTP status and Anthropic error type the gateway
// answers an A client with for err: an Anthropic upstream's own type is
// kept; anything else is classified and mapped; 503
// becomes 529 overloaded_error. A type name is only taken as Anthropic's
// when it agrees with the HTTP status: OpenAI also says
// "invalid_request_error", for a 401 or a 404 too, and an A client must
// then see authentication_error or not_found_error (table 10.2).
func ErrorStatus(err error) (status int, typ string) {
	var ue *llm.UpstreamError
	if errors.As(err, &ue) {
		if s, ok := anthropicTypes[ue.Type]; ok && (ue.Status < 400 || ue.Status == s) {
			if s == 503 {
				s = 529
			}
			return s, ue.Type
		}
	}
	c := llm.Classify(err)
	status = c.Status
	if status == 503 {
		status = 529
	}
	return status, ErrorType(status)
}
