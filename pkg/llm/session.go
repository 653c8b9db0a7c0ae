package llm

import "sync"

// SessionState is what providers learned about their upstreams during one
// client session: fallbacks (an upstream rejected strict tool schemas, or
// the signatures of replayed thinking, so the request was sent again
// without them) that later requests of the same session apply from their
// first attempt. Other sessions do not see them.
// The zero value is ready; a nil *SessionState remembers nothing, so a
// fallback then applies to its own request only. Safe for concurrent use.
type SessionState struct {
	mu sync.Mutex
	// strictOff holds the scopes ("<provider>\x00<endpoint>\x00<model>")
	// whose upstream rejected strict tools; guarded by mu.
	strictOff map[string]bool
	// thinkingOff holds the scopes whose upstream rejected the signatures
	// of replayed thinking; guarded by mu.
	thinkingOff map[string]bool
}

// UpstreamScope names the upstream a fallback applies to: the provider,
// its endpoint and the model.
func UpstreamScope(provider, endpoint, model string) string {
	return provider + "\x00" + endpoint + "\x00" + model
}

// StrictToolsScope is the UpstreamScope of a strict-tools fallback.
func StrictToolsScope(provider, endpoint, model string) string {
	return UpstreamScope(provider, endpoint, model)
}

// StrictToolsDisabled reports whether the session's requests to scope go
// without strict tools.
func (s *SessionState) StrictToolsDisabled(scope string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.strictOff[scope]
}

// DisableStrictTools records that scope's upstream rejected strict tools.
func (s *SessionState) DisableStrictTools(scope string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.strictOff == nil {
		s.strictOff = map[string]bool{}
	}
	s.strictOff[scope] = true
}

// ThinkingReplayDisabled reports whether the session's requests to scope go
// without replayed thinking blocks.
func (s *SessionState) ThinkingReplayDisabled(scope string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thinkingOff[scope]
}

// DisableThinkingReplay records that scope's upstream rejected the
// signatures of replayed thinking.
func (s *SessionState) DisableThinkingReplay(scope string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thinkingOff == nil {
		s.thinkingOff = map[string]bool{}
	}
	s.thinkingOff[scope] = true
}
