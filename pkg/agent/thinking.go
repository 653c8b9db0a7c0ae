package agent

import (
	"slices"

	"github.com/ompgo/omp/pkg/llm"
)

// ThinkingLevels are the thinking levels a session may name.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// IsThinkingLevel reports whether l is one of ThinkingLevels.
func IsThinkingLevel(l string) bool { return slices.Contains(ThinkingLevels, l) }

// ClampThinkingLevel keeps a level the model supports: "off" without
// reasoning, xhigh becomes high where the model lacks it.
func ClampThinkingLevel(m llm.Model, level string) string {
	if !m.Reasoning {
		return "off"
	}
	if level == "xhigh" && !supportsXHigh(m) {
		return "high"
	}
	return level
}

func supportsXHigh(m llm.Model) bool {
	return m.Thinking != nil && slices.Contains(m.Thinking.Efforts, llm.Effort("xhigh"))
}

// AvailableThinkingLevels are the levels m supports, in cycling order: off
// → minimal → low → medium → high (→ xhigh); only off without reasoning.
func AvailableThinkingLevels(m llm.Model) []string {
	if !m.Reasoning {
		return []string{"off"}
	}
	order := []string{"off", "minimal", "low", "medium", "high"}
	if supportsXHigh(m) {
		order = append(order, "xhigh")
	}
	return order
}

// NextThinkingLevel is the level after cur in the cycling order of a
// reasoning model.
func NextThinkingLevel(m llm.Model, cur string) string {
	order := AvailableThinkingLevels(m)
	for i, l := range order {
		if l == cur {
			return order[(i+1)%len(order)]
		}
	}
	return order[0]
}
