package anthropic

import (
	"errors"
	"regexp"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

// signaturePatterns are the texts of an upstream's rejection of a replayed
// thinking block's signature.
var signaturePatterns = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		// Anthropic and the proxies in front of it:
		// "Invalid `signature` in `thinking` block".
		"invalid": regexp.MustCompile("(?i)invalid\\s+`?signature`?\\s+in\\s+`?thinking`?(?:\\s+block)?"),
		// A Bedrock-backed proxy's schema check:
		// "messages.N.content.M.thinking.signature: Field required".
		"missing": regexp.MustCompile(`(?i)thinking\.signature\b[^"\n]{0,32}\brequired\b`),
		// A signed block whose conversation prefix was rewritten: not a
		// question of its signer.
		"prefix": regexp.MustCompile(`(?i)bound to a different conversation|block_binding\.prefix_mismatch_behavior|prefix_mismatch_behavior`),
	}
})

// thinkingSignatureRejected reports whether err is the upstream refusing
// the signature of a replayed thinking block: the signature is invalid or
// missing, and the rejection is not about a changed conversation prefix.
func thinkingSignatureRejected(err error) bool {
	var ue *llm.UpstreamError
	if !errors.As(err, &ue) {
		return false
	}
	msg, re := ue.Message, signaturePatterns()
	if re["invalid"].MatchString(msg) && re["prefix"].MatchString(msg) {
		return false
	}
	return re["invalid"].MatchString(msg) || re["missing"].MatchString(msg)
}

// replaysThinking reports whether the thinking of assistant message m goes
// back upstream: only Anthropic's own turns are replayed.
func replaysThinking(m *llm.Message) bool {
	return m.API == llm.APIAnthropic || (m.API == "" && m.Provider == "anthropic")
}

// anthropicSignature is the signature a thinking block is replayed with:
// its own, or the one inside our Anthropic signature token; "" when the
// block has none or another provider's reasoning signed it. Unsigned
// thinking is never replayed.
func anthropicSignature(sig string) string {
	if tok, api, ok := llm.DecodeSignatureToken(sig); ok && api == llm.APIAnthropic {
		return tok // our own token, handed back by a client
	}
	if llm.IsSignatureToken(sig) {
		return ""
	}
	return sig
}

// hasReplayedThinking reports whether req sends any thinking back upstream:
// a signed thinking block or a redacted one in a replayed assistant turn.
func hasReplayedThinking(req *llm.Request) bool {
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != llm.RoleAssistant || !replaysThinking(m) {
			continue
		}
		for j := range m.Content {
			c := &m.Content[j]
			if c.Type == llm.ContentThinking && anthropicSignature(c.ThinkingSignature) != "" ||
				c.Type == llm.ContentRedactedThinking {
				return true
			}
		}
	}
	return false
}

// withoutReplayedThinking is a shallow copy of req whose assistant turns
// carry no thinking or redacted thinking blocks. The caller's messages are
// left as they are.
func withoutReplayedThinking(req *llm.Request) *llm.Request {
	out := *req
	out.Messages = make([]llm.Message, len(req.Messages))
	copy(out.Messages, req.Messages)
	for i := range out.Messages {
		m := &out.Messages[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		var kept []llm.Content
		for _, c := range m.Content {
			if c.Type != llm.ContentThinking && c.Type != llm.ContentRedactedThinking {
				kept = append(kept, c)
			}
		}
		m.Content = kept
	}
	return &out
}
