package anthropic

import (
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

func TestErrorStatusMapsForeignTypesByStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    *llm.UpstreamError
		status int
		typ    string
	}{
		{"anthropic_type_kept", &llm.UpstreamError{Status: 529, Type: "overloaded_error"}, 529, "overloaded_error"},
		{"anthropic_in_stream_type_kept", &llm.UpstreamError{Status: 200, Type: "overloaded_error"}, 529, "overloaded_error"},
		{"openai_401_is_authentication_error", &llm.UpstreamError{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}, 401, "authentication_error"},
		{"openai_404_is_not_found_error", &llm.UpstreamError{Status: 404, Type: "invalid_request_error"}, 404, "not_found_error"},
		{"openai_403_is_permission_error", &llm.UpstreamError{Status: 403, Type: "invalid_request_error"}, 403, "permission_error"},
		{"openai_503_is_overloaded", &llm.UpstreamError{Status: 503, Type: "server_error"}, 529, "overloaded_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, typ := ErrorStatus(tc.err)
			if status != tc.status || typ != tc.typ {
				t.Errorf("got %d %s, want %d %s", status, typ, tc.status, tc.typ)
			}
		})
	}
}

func TestClientSignatureWrapsForeignReasoning(t *testing.T) {
	own := &llm.Message{API: llm.APIAnthropic}
	if got := clientSignature(own, "EqQB"); got != "EqQB" {
		t.Errorf("Anthropic signature changed: %q", got)
	}
	gem := &llm.Message{API: llm.APIGoogle}
	got := clientSignature(gem, "c2ln")
	if sig, api, ok := llm.DecodeSignatureToken(got); !ok || sig != "c2ln" || api != llm.APIGoogle {
		t.Errorf("Gemini signature not wrapped: %q", got)
	}
	if again := clientSignature(gem, got); again != got {
		t.Errorf("a token was wrapped twice: %q", again)
	}
}
