package compaction

import (
	"errors"

	"github.com/ompgo/omp/pkg/agent/session"
)

// ErrNothing is the manual-compaction failure when there is nothing to summarise.
var ErrNothing = errors.New("Nothing to compact")

// Preparation is what a compaction summarises and keeps.
type Preparation struct {
	// FirstKeptEntryID is the entry at the cut.
	FirstKeptEntryID string
	// ToSummarize are the history messages: the previous compaction's kept
	// messages and the window before the cut (or before the split
	// turn's start).
	ToSummarize []session.Message
	// TurnPrefix is the part of a split turn before the cut (nil when the
	// turn is not split).
	TurnPrefix []session.Message
	// Split is true when the cut is inside a turn.
	Split bool
	// PreviousSummary is the latest compaction's summary ("" for a first
	// compaction).
	PreviousSummary string
	// Files are the cumulative file operations.
	Files FileOps
	// TokensBefore is the adjusted context size at decision time.
	TokensBefore int
}

// Prepare finds the boundary, the cut point and a split turn over path
// (the active path, root first) and msgs = File.EntryMessages(path).
// usage is the token accounting of the current context (its Tokens become
// TokensBefore and its Ratio adapts keepRecentTokens). The keep
// budget is also capped at half the threshold of a contextWindow > 0, so
// that a model whose window is smaller than keepRecentTokens still gets
// room back. It returns ErrNothing when there is nothing to summarise.
func Prepare(path []*session.Entry, msgs []session.Message, s Settings, usage Usage, contextWindow int) (*Preparation, error) {
	if len(path) == 0 || path[len(path)-1].Type == session.TypeCompaction {
		return nil, ErrNothing
	}
	prev := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == session.TypeCompaction {
			prev = i
			break
		}
	}
	start := prev + 1
	keep := int(float64(s.keepRecent()) / usage.Ratio())
	if t := Threshold(contextWindow, s); t > 0 {
		keep = min(keep, t/2)
	}
	keep = max(keep, 1)
	cut := findCut(path, msgs, start, keep)
	if cut < 0 {
		return nil, ErrNothing
	}
	p := &Preparation{FirstKeptEntryID: path[cut].ID, TokensBefore: usage.Tokens, Files: newFileOps()}
	if prev >= 0 {
		var c session.Compaction
		_ = path[prev].Decode(&c)
		p.PreviousSummary = c.Summary
		p.Files.AddDetails(detailsOf(path[prev]))
		// The messages the previous compaction kept are summarised
		// now, or they would be lost.
		for j := 0; j < prev; j++ {
			if path[j].ID == c.FirstKeptEntryID {
				p.ToSummarize = appendMessages(p.ToSummarize, msgs[j:prev])
				break
			}
		}
	}
	historyEnd := cut
	// The entries pulled in before the cut do not make a split: look at
	// the first message at or after it.
	at := cut
	for at < len(path)-1 && msgs[at].Role == "" {
		at++
	}
	if !isTurnStart(path[at], msgs[at]) {
		for i := cut - 1; i >= start; i-- {
			if isTurnStart(path[i], msgs[i]) {
				historyEnd, p.Split = i, true
				break
			}
		}
	}
	p.ToSummarize = appendMessages(p.ToSummarize, msgs[start:historyEnd])
	if p.Split {
		p.TurnPrefix = appendMessages(nil, msgs[historyEnd:cut])
	}
	if len(p.ToSummarize) == 0 && len(p.TurnPrefix) == 0 {
		return nil, ErrNothing
	}
	for _, m := range p.ToSummarize {
		p.Files.AddMessage(m.LLM)
	}
	for _, m := range p.TurnPrefix {
		p.Files.AddMessage(m.LLM)
	}
	return p, nil
}

// findCut finds the cut point over path[start:]: walking back from the
// newest entry, the cut is the closest valid cut point at or after the
// entry where the kept estimate reaches keep (the first valid cut point
// when it never does), moved back over non-message entries. -1 when the
// window has no valid cut point.
func findCut(path []*session.Entry, msgs []session.Message, start, keep int) int {
	first := -1
	for i := start; i < len(path); i++ {
		if isCutPoint(path[i], msgs[i]) {
			first = i
			break
		}
	}
	if first < 0 {
		return -1
	}
	cut := first
	sum := 0
	next := -1 // the closest valid cut point at or after i
	for i := len(path) - 1; i >= start; i-- {
		if isCutPoint(path[i], msgs[i]) {
			next = i
		}
		if msgs[i].Role == "" {
			continue
		}
		sum += Estimate(msgs[i])
		if sum >= keep {
			if next >= 0 {
				cut = next
			} else {
				// Only tool results after i: cut at the closest point before.
				for j := i - 1; j >= start; j-- {
					if isCutPoint(path[j], msgs[j]) {
						cut = j
						break
					}
				}
			}
			break
		}
	}
	for cut > start && msgs[cut-1].Role == "" && path[cut-1].Type != session.TypeCompaction {
		cut--
	}
	return cut
}

// isCutPoint reports the entries a cut may land on: messages with role user, assistant,
// bashExecution, hookMessage/custom, branchSummary or compactionSummary,
// custom_message and branch_summary entries; never a toolResult.
func isCutPoint(e *session.Entry, m session.Message) bool {
	switch e.Type {
	case session.TypeCustomMessage, session.TypeBranchSummary:
		return true
	case session.TypeMessage:
		switch m.Role {
		case "user", "assistant", session.RoleBashExecution, session.RoleHookMessage, session.RoleCustom,
			session.RoleBranchSummary, session.RoleCompactionSummary:
			return true
		}
	}
	return false
}

// isTurnStart reports the entries that open a turn: a user or bashExecution
// message, a custom_message or a branch_summary.
func isTurnStart(e *session.Entry, m session.Message) bool {
	switch e.Type {
	case session.TypeCustomMessage, session.TypeBranchSummary:
		return true
	case session.TypeMessage:
		return m.Role == "user" || m.Role == session.RoleBashExecution
	}
	return false
}

func appendMessages(dst, src []session.Message) []session.Message {
	for _, m := range src {
		if m.Role != "" {
			dst = append(dst, m)
		}
	}
	return dst
}
