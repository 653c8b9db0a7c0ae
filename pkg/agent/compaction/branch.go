package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/ompgo/omp/pkg/agent/session"
)

// BranchEntries is collectEntriesForBranchSummary: the entries of
// oldPath after the deepest entry it shares with newPath.
func BranchEntries(oldPath, newPath []*session.Entry) []*session.Entry {
	onNew := make(map[string]bool, len(newPath))
	for _, e := range newPath {
		onNew[e.ID] = true
	}
	i := len(oldPath)
	for i > 0 && !onNew[oldPath[i-1].ID] {
		i--
	}
	return oldPath[i:]
}

// BranchPreparation is what a branch summary covers.
type BranchPreparation struct {
	// Messages are the newest messages of the branch that fit the budget,
	// oldest first.
	Messages []session.Message
	// Files are the file operations of the whole branch.
	Files FileOps
}

// PrepareBranch is prepareBranchEntries over entries and msgs =
// File.EntryMessages(entries): pass 1 collects the file operations of all
// entries (and the details of the agent's own earlier summaries); pass 2
// keeps messages newest to oldest until budget tokens are reached. A
// compaction entry counts as its compactionSummary message.
func PrepareBranch(entries []*session.Entry, msgs []session.Message, budget int) BranchPreparation {
	p := BranchPreparation{Files: newFileOps()}
	for i, e := range entries {
		switch e.Type {
		case session.TypeBranchSummary, session.TypeCompaction:
			p.Files.AddDetails(detailsOf(e))
		}
		p.Files.AddMessage(msgs[i].LLM)
	}
	var rev []session.Message
	used := 0
	for i := len(entries) - 1; i >= 0; i-- {
		m := msgs[i]
		if entries[i].Type == session.TypeCompaction {
			var c session.Compaction
			_ = entries[i].Decode(&c)
			raw, _ := json.Marshal(map[string]any{"role": session.RoleCompactionSummary, "summary": c.Summary,
				"tokensBefore": c.TokensBefore, "timestamp": 0})
			m, _ = session.DecodeMessage(raw)
		}
		if m.LLM == nil {
			continue
		}
		t := Estimate(m)
		if budget > 0 && used+t > budget {
			break
		}
		used += t
		rev = append(rev, m)
	}
	for i := len(rev) - 1; i >= 0; i-- {
		p.Messages = append(p.Messages, rev[i])
	}
	return p
}

// ErrNothingToSummarize means the branch has no messages: no entry is
// written.
var ErrNothingToSummarize = errors.New("Nothing to summarize")

// BranchSummary generates the branch_summary text of p: the
// transcript, the custom instructions or the branch prompt, the fixed
// preamble and the <files> block; details are the branch's file lists.
func BranchSummary(ctx context.Context, p BranchPreparation, o Options) (string, Details, error) {
	if len(p.Messages) == 0 {
		return "", Details{}, ErrNothingToSummarize
	}
	if o.Complete == nil {
		return "", Details{}, errors.New("compaction: no model")
	}
	reserve := o.Settings.branchReserve()
	if w := o.ContextWindow; w > 0 && float64(reserve) > 0.85*float64(w) {
		reserve = int(0.15 * float64(w))
	}
	prompt := conversation(Serialize(p.Messages, transcriptBudget(o.ContextWindow, reserve)))
	if ci := strings.TrimSpace(o.CustomInstructions); ci != "" {
		prompt += ci
	} else {
		prompt += strings.TrimSpace(branchPrompt)
	}
	text, err := o.Complete(ctx, SystemPrompt(), prompt, reserve/2)
	if err != nil {
		return "", Details{}, err
	}
	if strings.TrimSpace(text) == "" {
		return "", Details{}, errors.New("compaction: the model returned an empty summary")
	}
	summary := BranchPreamble + "\n\n" + strings.TrimSpace(text)
	return WithFiles(summary, p.Files, o.Cwd), p.Files.Details(), nil
}

// BranchBudget is tokenBudget = contextWindow − branchSummary.reserveTokens;
// 0 (no limit) for an unknown window.
func BranchBudget(contextWindow int, s Settings) int {
	if contextWindow <= 0 {
		return 0
	}
	return max(contextWindow-s.branchReserve(), 1024)
}
