package compaction

import (
	_ "embed"
	"strings"
)

// The prompt texts are our own (D30, D32).
var (
	//go:embed prompts/system.md
	systemPrompt string
	//go:embed prompts/compaction-summary.md
	summaryPrompt string
	//go:embed prompts/compaction-update-summary.md
	updatePrompt string
	//go:embed prompts/compaction-turn-prefix.md
	turnPrefixPrompt string
	//go:embed prompts/branch-summary.md
	branchPrompt string
)

// SystemPrompt is SUMMARIZATION_SYSTEM_PROMPT (D30).
func SystemPrompt() string { return strings.TrimSpace(systemPrompt) }

// BranchPreamble opens every branch summary (D32).
const BranchPreamble = "The user explored a different branch of this conversation and then returned here. Summary of that branch:"

// NoPriorHistory is the history part of a split turn with nothing before
// the turn (D28).
const NoPriorHistory = "No prior history."

// splitTurnSeparator joins the history and turn-prefix summaries (§6.6).
const splitTurnSeparator = "\n\n---\n\n**Turn Context (split turn):**\n\n"
