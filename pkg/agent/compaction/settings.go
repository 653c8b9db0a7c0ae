package compaction

import "math"

// Settings are the compaction.* and branchSummary.* settings keys.
type Settings struct {
	// Enabled turns automatic compaction on (compaction.enabled, true).
	Enabled bool
	// Strategy is "context-full" or "off" (other names act as
	// context-full in v1).
	Strategy string
	// ReserveTokens is compaction.reserveTokens (16384; ≤ 0 = default).
	ReserveTokens int
	// KeepRecentTokens is compaction.keepRecentTokens (20000).
	KeepRecentTokens int
	// AutoContinue is compaction.autoContinue (true).
	AutoContinue bool
	// ThresholdPercent and ThresholdTokens override the threshold when
	// positive (tokens win over percent; -1 = unset).
	ThresholdPercent float64
	ThresholdTokens  int
	// BranchSummaryEnabled is branchSummary.enabled (false).
	BranchSummaryEnabled bool
	// BranchReserveTokens is branchSummary.reserveTokens (16384).
	BranchReserveTokens int
}

// Defaults returns the default settings.
func Defaults() Settings {
	return Settings{Enabled: true, Strategy: "context-full", ReserveTokens: 16384, KeepRecentTokens: 20000,
		AutoContinue: true, ThresholdPercent: -1, ThresholdTokens: -1, BranchReserveTokens: 16384}
}

// Off reports whether automatic compaction is switched off by strategy.
func (s Settings) Off() bool { return s.Strategy == "off" }

func (s Settings) reserve() int {
	if s.ReserveTokens > 0 {
		return s.ReserveTokens
	}
	return 16384
}

func (s Settings) keepRecent() int {
	if s.KeepRecentTokens > 0 {
		return s.KeepRecentTokens
	}
	return 20000
}

func (s Settings) branchReserve() int {
	if s.BranchReserveTokens > 0 {
		return s.BranchReserveTokens
	}
	return 16384
}

// effectiveReserve is the reserve for a window: reserveTokens, or 15 %
// of a window it would take more than 85 % of (the small-window rule).
func (s Settings) effectiveReserve(contextWindow int) int {
	r := s.reserve()
	if contextWindow > 0 && float64(r) > 0.85*float64(contextWindow) {
		r = int(0.15 * float64(contextWindow))
	}
	return r
}

// transcriptBudget is the largest transcript a summary request may carry
// (contextWindow − reserveTokens, with the small-window reserve, less
// the answer's room); 0 = no limit for an unknown window.
func transcriptBudget(contextWindow, reserve int) int {
	if contextWindow <= 0 {
		return 0
	}
	return max(contextWindow-reserve-reserve*8/10, 1024)
}

// Threshold is the context size in tokens above which automatic
// compaction runs: thresholdTokens, else thresholdPercent of
// the window, else window − max(15 % of the window, reserveTokens) with
// the reserve capped at 85 % of the window; clamped to
// [1, window − 1024]. A window ≤ 0 has no threshold (0).
func Threshold(contextWindow int, s Settings) int {
	if contextWindow <= 0 {
		return 0
	}
	w := float64(contextWindow)
	var t float64
	switch {
	case s.ThresholdTokens > 0:
		t = float64(s.ThresholdTokens)
	case s.ThresholdPercent > 0:
		t = w * s.ThresholdPercent / 100
	default:
		reserve := float64(s.reserve())
		if reserve > 0.85*w {
			reserve = 0.15 * w
		}
		t = w - math.Max(0.15*w, reserve)
	}
	return int(min(max(math.Floor(t), 1), math.Max(w-1024, 1)))
}
