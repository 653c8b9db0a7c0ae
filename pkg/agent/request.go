package agent

import (
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// anthropicBudgets are the Anthropic thinking budgets in tokens, minimal to xhigh.
var anthropicBudgets = map[string]int{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}

const imageOmitted = "[image omitted: model does not accept images]"

// request builds the canonical request of the next turn: system
// prompt, the repaired context, the tools, maxTokens, reasoning,
// the session id for prompt-cache affinity and the session's provider
// state.
func (a *Agent) request(tc turnConfig) *llm.Request {
	msgs := session.LLMMessages(a.messages)
	m := tc.model
	if !m.AcceptsImages() {
		msgs = withoutImages(msgs)
	}
	req := &llm.Request{
		Model:          m.WireID(),
		Messages:       msgs,
		Stream:         true,
		SessionID:      a.Session.Header().ID,
		PromptCacheKey: a.Session.Header().ID,
		MaxTokens:      maxTokens(m, a.SystemPrompt, msgs),
		Session:        a.providerState(),
	}
	if a.SystemPrompt != "" {
		req.System = []llm.SystemBlock{{Text: a.SystemPrompt}}
	}
	if a.Tools != nil {
		req.Tools = a.Tools.Specs()
	}
	if level := tc.level; m.Reasoning && level != "" {
		if level == "off" {
			req.DisableReasoning = true
		} else {
			req.Reasoning = llm.Effort(level)
			if m.API == llm.APIAnthropic {
				if b := anthropicBudgets[level]; b > 0 {
					req.ThinkingBudget = min(b, max(req.MaxTokens-1, 1024))
				}
			}
		}
	}
	return req
}

// providerState is the provider state of the current session: the
// fallbacks its earlier turns taught apply to its later turns only.
func (a *Agent) providerState() *llm.SessionState {
	if id := a.Session.Header().ID; a.sessionState == nil || a.sessionStateFor != id {
		a.sessionState, a.sessionStateFor = &llm.SessionState{}, id
	}
	return a.sessionState
}

// maxTokens is the model's maxTokens, capped at the room left in the
// context window (estimated at 4 characters a token), at least 1024.
func maxTokens(m llm.Model, system string, msgs []llm.Message) int {
	mt := m.MaxTokens
	if mt <= 0 {
		return 0
	}
	if m.ContextWindow > 0 {
		chars := len(system)
		for i := range msgs {
			for _, c := range msgs[i].Content {
				chars += len(c.Text) + len(c.Thinking) + len(c.Arguments)
			}
		}
		if room := m.ContextWindow - chars/4; room < mt {
			mt = room
		}
	}
	return max(mt, 1024)
}

// withoutImages replaces image blocks with a fixed "image omitted" text.
func withoutImages(msgs []llm.Message) []llm.Message {
	for i := range msgs {
		copied := false
		for j, c := range msgs[i].Content {
			if c.Type != llm.ContentImage {
				continue
			}
			if !copied {
				// The blocks belong to the session's messages: copy first.
				msgs[i].Content, copied = append([]llm.Content(nil), msgs[i].Content...), true
			}
			msgs[i].Content[j] = llm.Text(imageOmitted)
		}
	}
	return msgs
}
