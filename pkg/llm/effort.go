package llm

// ThinkingBudget returns the gateway's default thinking budget in tokens
// for effort e on budget-based models, 0 for
// EffortNone.
func ThinkingBudget(e Effort) int {
	switch e {
	case EffortMinimal:
		return 1024
	case EffortLow:
		return 2048
	case EffortMedium:
		return 8192
	case EffortHigh:
		return 16384
	case EffortXHigh:
		return 32768
	}
	return 0
}

// EffortForBudget maps an explicit thinking budget to an effort for
// effort-based upstreams (the reverse of ThinkingBudget); a negative budget
// (Gemini dynamic) is medium and 0 is EffortNone.
func EffortForBudget(budget int) Effort {
	switch {
	case budget < 0:
		return EffortMedium
	case budget == 0:
		return EffortNone
	case budget <= 1024:
		return EffortMinimal
	case budget <= 4096:
		return EffortLow
	case budget <= 12288:
		return EffortMedium
	}
	return EffortHigh
}
