package llm

import (
	"errors"
	"regexp"
	"strings"
	"sync"
)

// PolicyDenial is what an upstream failure says about the account's
// entitlements: the token is valid but
// this account may not do this, so a sibling account may. The resolver
// blocks the account for 60 s — only for the requested model when the
// denial names it — and rotates without re-minting the token.
type PolicyDenial uint8

const (
	// NoPolicyDenial: the failure is not an account-policy denial.
	NoPolicyDenial PolicyDenial = iota
	// AccountPolicy: the account is denied whatever the model (Codex's
	// cyber_policy, "trusted access for cyber").
	AccountPolicy
	// ModelPolicy: the account is not entitled to the requested model —
	// Codex's "The '<model>' model is not supported when using Codex with a
	// ChatGPT account." naming the requested model, or Cursor's plan
	// denials. Only that model is blocked (scope "model-policy:<model>").
	ModelPolicy
	// ForeignModelPolicy: Codex's entitlement sentence naming a model other
	// than the requested one (or no requested model). The sentence is
	// provider-controlled text: it must neither block nor rotate.
	ForeignModelPolicy
)

// maxPolicyModel bounds the bare model id of a model-policy scope.
const maxPolicyModel = 256

var policyPatterns = sync.OnceValue(func() *policyRegexps {
	return &policyRegexps{
		account:      regexp.MustCompile(`(?i)\bcyber_policy\b|trusted access for cyber`),
		codexModel:   regexp.MustCompile(`(?i)^\s*The ['"]([^'"\r\n]+)['"] model is not supported when using Codex with a ChatGPT account\.\s*$`),
		cursorMarker: regexp.MustCompile(`(?i)\bERROR_RATE_LIMITED_CHANGEABLE\b`),
		cursorPlan:   regexp.MustCompile(`(?i)\bNamed models unavailable\b|\bModel unavailable on\b|\bFree plans can only use\b`),
	}
})

type policyRegexps struct{ account, codexModel, cursorMarker, cursorPlan *regexp.Regexp }

// BareModelID is the model part of a model-policy block scope: the id
// after its last "/", trimmed and lower-cased; "" when that is empty,
// longer than 256 bytes or holds a NUL.
func BareModelID(modelID string) string {
	if i := strings.LastIndexByte(modelID, '/'); i >= 0 {
		modelID = modelID[i+1:]
	}
	id := strings.ToLower(strings.TrimSpace(modelID))
	if id == "" || len(id) > maxPolicyModel || strings.IndexByte(id, 0) >= 0 {
		return ""
	}
	return id
}

// PolicyDenialOf classifies err of a request of provider for modelID
// (the reference 18.1.21's isAccountPolicyError,
// isCodexChatGPTAccountPolicyError and isCursorPlanAccountPolicyError).
// It reads the upstream error's type, code and message whatever its HTTP
// status (Codex answers the model denial with a 400), but — unlike the
// reference, which matches its patterns anywhere in the text — not where a
// client could put the words itself: upstreams quote invalid client values
// in their 400 messages ("Invalid value: '…'"), and a denial blocks the
// account fleet-wide. So Codex's model sentence must be the whole message,
// and "cyber_policy" / "trusted access for cyber" count in the code or
// type on any status but in the message only when the status is not a
// request-validation one (400, 422).
func PolicyDenialOf(err error, provider, modelID string) PolicyDenial {
	if err == nil {
		return NoPolicyDenial
	}
	text := err.Error()
	message, structured, echoes := text, "", false
	var ue *UpstreamError
	if errors.As(err, &ue) {
		text = ue.Type + " " + ue.Code + " " + ue.Message
		message, structured = ue.Message, ue.Type+" "+ue.Code
		echoes = ue.Status == 400 || ue.Status == 422
	}
	re := policyPatterns()
	cursorModel := provider == "cursor" && re.cursorMarker.MatchString(text) && re.cursorPlan.MatchString(text)
	if m := re.codexModel.FindStringSubmatch(message); m != nil && BareModelID(m[1]) != "" {
		if provider == "openai-codex" && BareModelID(m[1]) == BareModelID(modelID) {
			return ModelPolicy
		}
		return ForeignModelPolicy
	}
	if cursorModel {
		if BareModelID(modelID) == "" {
			return ForeignModelPolicy
		}
		return ModelPolicy
	}
	if re.account.MatchString(structured) || !echoes && re.account.MatchString(message) {
		return AccountPolicy
	}
	return NoPolicyDenial
}
