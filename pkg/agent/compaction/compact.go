package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
)

// Complete makes one summarisation call with the session's current model:
// a system prompt, one user prompt, an output limit, thinking off.
// It returns the text of the answer. The caller owns retries of
// transient failures (at most 3 attempts).
type Complete func(ctx context.Context, system, prompt string, maxTokens int) (string, error)

// Options configure Compact and BranchSummary.
type Options struct {
	Complete Complete
	Settings Settings
	// ContextWindow is the current model's window (caps the transcript).
	ContextWindow int
	// CustomInstructions is the /compact text ("" = none).
	CustomInstructions string
	// Cwd makes <files> paths relative.
	Cwd string
}

// Result is a finished compaction: the compaction entry's fields
// (the reference's CompactionResult).
type Result struct {
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId"`
	TokensBefore     int     `json:"tokensBefore"`
	Details          Details `json:"details"`
}

// Entry returns the compaction entry's type-specific fields.
func (r *Result) Entry() any { return r }

// JSON is the CompactionResult object.
func (r *Result) JSON() json.RawMessage {
	b, _ := json.Marshal(r)
	return b
}

// Compact generates the summary of p: the history summary (the
// update prompt when there is a previous summary) and, for a split turn,
// the turn-prefix summary, in parallel; merged, with the <files> block.
func Compact(ctx context.Context, p *Preparation, o Options) (*Result, error) {
	if o.Complete == nil {
		return nil, errors.New("compaction: no model")
	}
	reserve := o.Settings.effectiveReserve(o.ContextWindow)
	maxTranscript := transcriptBudget(o.ContextWindow, reserve)
	var history, prefix string
	var herr, perr error
	var wg sync.WaitGroup
	if p.Split {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := conversation(Serialize(p.TurnPrefix, maxTranscript)) + strings.TrimSpace(turnPrefixPrompt)
			prefix, perr = o.Complete(ctx, SystemPrompt(), prompt, reserve/2)
		}()
	}
	switch {
	case len(p.ToSummarize) > 0:
		var b strings.Builder
		b.WriteString(conversation(Serialize(p.ToSummarize, maxTranscript)))
		if p.PreviousSummary != "" {
			b.WriteString("<previous-summary>\n" + strings.TrimSpace(filesBlocks().ReplaceAllString(p.PreviousSummary, "")) +
				"\n</previous-summary>\n\n")
			b.WriteString(strings.TrimSpace(updatePrompt))
		} else {
			b.WriteString(strings.TrimSpace(summaryPrompt))
		}
		if ci := strings.TrimSpace(o.CustomInstructions); ci != "" {
			b.WriteString("\n\nAdditional focus requested by the user:\n" + ci)
		}
		history, herr = o.Complete(ctx, SystemPrompt(), b.String(), reserve*8/10)
	case p.PreviousSummary != "":
		history = strings.TrimSpace(filesBlocks().ReplaceAllString(p.PreviousSummary, ""))
	default:
		history = NoPriorHistory
	}
	wg.Wait()
	if herr != nil {
		return nil, herr
	}
	if perr != nil {
		return nil, perr
	}
	summary := strings.TrimSpace(history)
	if p.Split {
		summary += splitTurnSeparator + strings.TrimSpace(prefix)
	}
	if summary == "" {
		return nil, errors.New("compaction: the model returned an empty summary")
	}
	return &Result{Summary: WithFiles(summary, p.Files, o.Cwd), FirstKeptEntryID: p.FirstKeptEntryID,
		TokensBefore: p.TokensBefore, Details: p.Files.Details()}, nil
}

func conversation(text string) string {
	return "<conversation>\n" + text + "\n</conversation>\n\n"
}
