package compaction

import (
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// imageTokens is the estimate for one image.
const imageTokens = 1200

// EstimateLLM is the estimator for one provider message: ceil(chars/4)
// over text, thinking, tool-call names and argument JSON and tool-result
// text, plus 1,200 tokens per image.
func EstimateLLM(m *llm.Message) int {
	if m == nil {
		return 0
	}
	chars, images := 0, 0
	for i := range m.Content {
		c := &m.Content[i]
		switch c.Type {
		case llm.ContentText:
			chars += len(c.Text)
		case llm.ContentThinking:
			chars += len(c.Thinking)
		case llm.ContentToolCall:
			chars += len(c.Name) + len(c.Arguments)
		case llm.ContentImage:
			images++
		}
	}
	return (chars+3)/4 + images*imageTokens
}

// Estimate is EstimateLLM over an agent message's provider form (0 for a
// message that never reaches the model).
func Estimate(m session.Message) int { return EstimateLLM(m.LLM) }

// ContextTokens is the context size an assistant message's usage
// measured: input + output + cacheRead + cacheWrite.
func ContextTokens(u llm.Usage) int {
	return int(u.Input + u.Output + u.CacheRead + u.CacheWrite)
}

// usable reports whether m is an assistant message whose usage measures
// the context: not aborted, not an error, with a non-zero usage.
func usable(m *llm.Message) bool {
	return m != nil && m.Role == llm.RoleAssistant && m.StopReason != llm.StopError &&
		m.StopReason != llm.StopAborted && ContextTokens(m.Usage) > 0
}

// Usage is the token accounting of a context.
type Usage struct {
	// Tokens is the adjusted context size.
	Tokens int
	// Index is the position of the assistant message whose usage was
	// used, or -1 when the whole context was estimated.
	Index int
	// Measured is that message's context tokens; Estimated the estimate of
	// the messages up to and including it (for the measured/estimated ratio).
	Measured, Estimated int
}

// ContextUsage is the context tokens of the last usable assistant
// message newer than the latest compaction summary, plus the estimate of
// every later message, minus savings (tokens pruned from messages the
// usage had measured). With no usable message the whole context is
// estimated.
func ContextUsage(msgs []session.Message, savings int) Usage {
	var after int64 = -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == session.RoleCompactionSummary && msgs[i].LLM != nil {
			after = msgs[i].LLM.Timestamp
			break
		}
	}
	tail := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].LLM
		if usable(m) && m.Timestamp > after {
			est := 0
			for j := 0; j <= i; j++ {
				est += Estimate(msgs[j])
			}
			measured := ContextTokens(m.Usage)
			return Usage{Tokens: max(measured+tail-savings, 0), Index: i, Measured: measured, Estimated: est}
		}
		tail += Estimate(msgs[i])
	}
	return Usage{Tokens: tail, Index: -1}
}

// Ratio is measured / estimated tokens of the same messages, clamped
// to [0.5, 2]; 1 without a measurement.
func (u Usage) Ratio() float64 {
	if u.Index < 0 || u.Estimated <= 0 {
		return 1
	}
	return min(max(float64(u.Measured)/float64(u.Estimated), 0.5), 2)
}
