package cli

import (
	"slices"

	"github.com/ompgo/omp/pkg/llm"
)

// Thinking-level helpers shared by the RPC and interactive modes.

func isThinkingLevel(l string) bool { return slices.Contains(thinkingLevels, l) }

// clampLevel keeps a level the model supports: "off" without reasoning,
// xhigh becomes high where the model lacks it.
func clampLevel(m llm.Model, level string) string {
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

// nextLevel is cycle_thinking_level's order: off → minimal → low →
// medium → high (→ xhigh) → off.
func nextLevel(m llm.Model, cur string) string {
	order := []string{"off", "minimal", "low", "medium", "high"}
	if supportsXHigh(m) {
		order = append(order, "xhigh")
	}
	for i, l := range order {
		if l == cur {
			return order[(i+1)%len(order)]
		}
	}
	return order[0]
}
