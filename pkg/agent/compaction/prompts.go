package compaction

import (
	_ "embed"
	"strings"
)

// The prompt texts are our own.
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

// SystemPrompt is SUMMARIZATION_SYSTEM_PROMPT.
func SystemPrompt() string { return strings.TrimSpace(systemPrompt) }

// BranchPreamble opens every branch summary.
const BranchPreamble = "The user explored a different branch of this conversation and then returned here. Summary of that branch:"

// NoPriorHistory is the history part of a split turn with nothing before
// the turn.
const NoPriorHistory = "No prior history."

// splitTurnSeparator joins the history and turn-prefix summaries.
const splitTurnSeparator = "\n\n---\n\n**Turn Context (split turn):**\n\n"
