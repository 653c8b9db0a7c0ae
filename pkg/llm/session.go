package llm

import "sync"

// SessionState is what providers learned about their upstreams during one
// client session: fallbacks (an upstream rejected strict tool schemas, so
// the request was sent again without them) that later requests of the same
// session apply from their first attempt. Other sessions do not see them.
// The zero value is ready; a nil *SessionState remembers nothing, so a
// fallback then applies to its own request only. Safe for concurrent use.
type SessionState struct {
	mu sync.Mutex
	// strictOff holds the scopes ("<provider>\x00<endpoint>\x00<model>")
	// whose upstream rejected strict tools; guarded by mu.
	strictOff map[string]bool
}

// StrictToolsScope names the upstream a strict-tools fallback applies to:
// the provider, its endpoint and the model.
func StrictToolsScope(provider, endpoint, model string) string {
	return provider + "\x00" + endpoint + "\x00" + model
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
