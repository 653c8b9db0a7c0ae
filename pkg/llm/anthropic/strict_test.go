package anthropic

import (
	"errors"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestStrictRejected(t *testing.T) {
	tests := []struct {
		status    int
		typ, msg  string
		rejection bool
	}{
		{400, "invalid_request_error", "tools.0.custom.strict: Extra inputs are not permitted", true},
		{400, "invalid_request_error", "Structured outputs are not supported for this model", true},
		{400, "invalid_request_error", "Invalid schema for function 'get': bad", true},
		{400, "invalid_request_error", "The compiled grammar is too large", true},
		{400, "invalid_request_error", "tool schema is too complex to compile", true},
		{400, "", "tool schema is too complex to compile", false},
		{400, "invalid_request_error", "messages: text content blocks must be non-empty", false},
		{429, "invalid_request_error", "tools.0.custom.strict: Extra inputs are not permitted", false},
	}
	for _, tt := range tests {
		err := &llm.UpstreamError{Provider: "anthropic", Status: tt.status, Type: tt.typ, Message: tt.msg}
		if got := strictRejected(err); got != tt.rejection {
			t.Errorf("%d %s %q: %v, want %v", tt.status, tt.typ, tt.msg, got, tt.rejection)
		}
	}
	if strictRejected(errors.New("tools.0.custom.strict: Extra inputs are not permitted")) {
		t.Error("a transport error counted as a strict-tools rejection")
	}
}
