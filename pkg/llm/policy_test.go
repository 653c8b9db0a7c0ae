package llm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/llm"
)

// The account-policy bodies of the reference 18.1.21 (error/flags.ts):
// cyber_policy, Codex's ChatGPT-account sentence for the requested model
// only, Cursor's plan denials only with their marker — except where a
// client could have put the words in an upstream's message itself (a 400
// quoting an invalid value): that blocks nothing.
func TestPolicyDenialOf(t *testing.T) {
	const codexSentence = "The 'gpt-5.4' model is not supported when using Codex with a ChatGPT account."
	up := func(status int, typ, code, msg string) error {
		return &llm.UpstreamError{Provider: "p", Status: status, Type: typ, Code: code, Message: msg}
	}
	for _, c := range []struct {
		name            string
		err             error
		provider, model string
		want            llm.PolicyDenial
	}{
		{"codex model denial 403", up(403, "", "", codexSentence), "openai-codex", "gpt-5.4", llm.ModelPolicy},
		{"codex model denial 400, prefixed id, other case", up(400, "", "", `The "GPT-5.4" model is not supported when using Codex with a ChatGPT account.`), "openai-codex", "openai-codex/gpt-5.4", llm.ModelPolicy},
		{"codex sentence names another model", up(403, "", "", codexSentence), "openai-codex", "gpt-5.5", llm.ForeignModelPolicy},
		{"codex sentence without a request model", up(403, "", "", codexSentence), "openai-codex", "", llm.ForeignModelPolicy},
		{"codex sentence from another provider", up(403, "", "", codexSentence), "openai", "gpt-5.4", llm.ForeignModelPolicy},
		{"cyber_policy code", up(400, "invalid_request_error", "cyber_policy", "This request was flagged."), "openai-codex", "gpt-5.4", llm.AccountPolicy},
		{"trusted access message", up(403, "", "", "Requires Trusted Access for Cyber"), "anthropic", "x", llm.AccountPolicy},
		{"cursor plan denial", up(403, "", "ERROR_RATE_LIMITED_CHANGEABLE", "Named models unavailable on your plan"), "cursor", "claude-4-opus", llm.ModelPolicy},
		{"cursor plan denial without a model", up(403, "", "", "ERROR_RATE_LIMITED_CHANGEABLE: Free plans can only use auto"), "cursor", "", llm.ForeignModelPolicy},
		{"cursor text without the marker", up(403, "", "", "Named models unavailable"), "cursor", "claude-4-opus", llm.NoPolicyDenial},
		{"cursor text from another provider", up(403, "", "ERROR_RATE_LIMITED_CHANGEABLE", "Named models unavailable"), "anthropic", "x", llm.NoPolicyDenial},
		{"plain 403", up(403, "permission_error", "", "Your account is not allowed to use this API"), "openai", "gpt-5", llm.NoPolicyDenial},
		{"wrapped, no status", fmt.Errorf("stream: %w", errors.New("cyber_policy violation")), "openai-codex", "gpt-5.4", llm.AccountPolicy},
		{"nil", nil, "openai-codex", "gpt-5.4", llm.NoPolicyDenial},
		{"400 quoting a client value", up(400, "invalid_request_error", "", "Invalid value: 'cyber_policy'. Supported values are: 'low', 'medium', and 'high'."), "openai-codex", "gpt-5", llm.NoPolicyDenial},
		{"422 quoting a client value", up(422, "", "", "trusted access for cyber is not a valid effort"), "openai", "gpt-5", llm.NoPolicyDenial},
		{"400 quoting the codex sentence", up(400, "invalid_request_error", "", "Unknown parameter: '"+codexSentence+"'"), "openai-codex", "gpt-5.4", llm.NoPolicyDenial},
		{"codex sentence with spaces around", up(400, "", "", "  "+codexSentence+"\n"), "openai-codex", "gpt-5.4", llm.ModelPolicy},
	} {
		if got := llm.PolicyDenialOf(c.err, c.provider, c.model); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestBareModelID(t *testing.T) {
	for in, want := range map[string]string{
		"openai-codex/GPT-5.4": "gpt-5.4", " gpt-5 ": "gpt-5", "a/b/C": "c", "x/": "", "": "", "a\x00b": "",
		strings.Repeat("a", 257): "", strings.Repeat("a", 256): strings.Repeat("a", 256),
	} {
		if got := llm.BareModelID(in); got != want {
			t.Errorf("BareModelID(%q) = %q, want %q", in, got, want)
		}
	}
}
