package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ompgo/omp/pkg/agent/compaction"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// Reasons of auto_compaction_start (§5.1).
const (
	ReasonThreshold  = "threshold"
	ReasonOverflow   = "overflow"
	ReasonIncomplete = "incomplete"
)

// autoContinueText is D20's auto-continue developer message.
const autoContinueText = "Continue if you have next steps."

// summaryAttempts is D25's bound on summariser calls.
const summaryAttempts = 3

// Compact is the manual compaction (/compact, RPC compact, §6.3): it
// ignores compaction.enabled, prunes tool outputs first (D26) and returns
// the CompactionResult. compaction.ErrNothing ("Nothing to compact")
// when there is nothing to summarise.
func (a *Agent) Compact(ctx context.Context, customInstructions string) (*compaction.Result, error) {
	a.load()
	return a.compact(ctx, customInstructions)
}

// compact prunes, prepares, summarises with the current model, appends
// the compaction entry and rebuilds the in-memory context (§6.9).
func (a *Agent) compact(ctx context.Context, instructions string) (*compaction.Result, error) {
	if err := a.prune(); err != nil {
		return nil, err
	}
	path := a.Session.ActivePath()
	msgs := a.Session.EntryMessages(path)
	usage := compaction.ContextUsage(a.messages, a.pruneSavings())
	prep, err := compaction.Prepare(path, msgs, a.Compaction, usage, a.Model.ContextWindow)
	if err != nil {
		return nil, err
	}
	res, err := compaction.Compact(ctx, prep, a.summaryOptions(instructions))
	if err != nil {
		return nil, err
	}
	if _, err := a.Session.Append(session.TypeCompaction, res.Entry()); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	a.messages = a.Session.BuildContext().Messages
	a.pruned = 0
	return res, nil
}

func (a *Agent) summaryOptions(instructions string) compaction.Options {
	return compaction.Options{Complete: a.complete, Settings: a.Compaction, ContextWindow: a.Model.ContextWindow,
		CustomInstructions: instructions, Cwd: a.Session.Header().Cwd}
}

// prune is D26 over the active path: the pruned tool results are
// rewritten in the file and the context rebuilt; the saving is
// remembered against the usage that measured them (D24).
func (a *Agent) prune() error {
	path := a.Session.ActivePath()
	p := compaction.Prune(path, a.Session.EntryMessages(path), a.now().UnixMilli())
	if len(p.Replace) == 0 {
		return nil
	}
	if err := a.Session.ReplaceMessages(p.Replace); err != nil {
		return err
	}
	// Failed assistant messages the loop dropped from memory come back
	// here; the payload repairs (§3.9) leave them out all the same.
	a.messages = a.Session.BuildContext().Messages
	u := compaction.ContextUsage(a.messages, 0)
	if u.Index >= 0 {
		a.pruned += p.Saved
		a.prunedAt = a.messages[u.Index].LLM.Timestamp
	}
	return nil
}

// pruneSavings is the saving made since the current usage was measured.
func (a *Agent) pruneSavings() int {
	u := compaction.ContextUsage(a.messages, 0)
	if u.Index >= 0 && a.messages[u.Index].LLM.Timestamp == a.prunedAt {
		return a.pruned
	}
	return 0
}

// complete is the summariser call (D52: the current model and
// credentials; D29: thinking off), tried at most 3 times when the
// failure is transient (D25).
func (a *Agent) complete(ctx context.Context, system, prompt string, maxTokens int) (string, error) {
	var last error
	for attempt := 1; attempt <= summaryAttempts; attempt++ {
		text, m, err := a.completeOnce(ctx, system, prompt, maxTokens)
		if err == nil {
			return text, nil
		}
		last = err
		if ctx.Err() != nil || m == nil || !IsTransient(m) || attempt == summaryAttempts {
			break
		}
		d, ok := a.Retry.delay(attempt, a.retryAfter)
		if !ok {
			break
		}
		if err := a.sleep(ctx, d); err != nil {
			return "", err
		}
	}
	return "", last
}

func (a *Agent) completeOnce(ctx context.Context, system, prompt string, maxTokens int) (string, *llm.Message, error) {
	if a.Model.MaxTokens > 0 {
		maxTokens = min(maxTokens, a.Model.MaxTokens)
	}
	req := &llm.Request{Model: a.Model.WireID(), Stream: true, MaxTokens: max(maxTokens, 256),
		System:    []llm.SystemBlock{{Text: system}},
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text(prompt)}, Timestamp: a.now().UnixMilli()}},
		SessionID: a.Session.Header().ID, DisableReasoning: a.Model.Reasoning}
	fail := func(err error) (string, *llm.Message, error) {
		m := &llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopError, ErrorMessage: err.Error()}
		var ue *llm.UpstreamError
		if errors.As(err, &ue) {
			m.ErrorStatus = ue.Status
			if ue.Message != "" {
				m.ErrorMessage = ue.Message
			}
			a.retryAfter = ue.RetryAfter
		}
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		return "", m, errors.New(m.ErrorMessage)
	}
	a.retryAfter = 0
	cred := a.Credential
	if a.Credentials != nil {
		var err error
		if cred, err = a.Credentials(ctx); err != nil {
			return fail(err)
		}
	}
	st, err := a.Provider.Stream(ctx, req, a.Model, cred)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	for ev := range st.Events() {
		switch ev.Type {
		case llm.EventDone:
			var b strings.Builder
			for _, c := range ev.Partial.Content {
				if c.Type == llm.ContentText {
					b.WriteString(c.Text)
				}
			}
			return b.String(), ev.Partial, nil
		case llm.EventError:
			e := ev.Err
			if e == nil {
				e = errors.New(ev.Partial.ErrorMessage)
			}
			return fail(e)
		}
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return fail(llm.ErrTruncated)
}

// maintain is §5.6 steps 2–4 after a run that ended with final. It
// returns the run's new final message when a recovery continued the run.
// A recovery whose continued run fails again before any assistant turn
// succeeds counts as a failed attempt; two of them in a row stop the
// recovery so that a context no compaction can shrink cannot loop.
func (a *Agent) maintain(ctx context.Context, final *llm.Message) (*llm.Message, error) {
	for stuck := 0; final != nil && ctx.Err() == nil; {
		var reason, failPrefix string
		switch {
		case final.StopReason == llm.StopError && IsOverflow(final) && a.newerThanCompaction(final):
			reason, failPrefix = ReasonOverflow, "Context overflow recovery failed: "
		case final.StopReason == llm.StopLength && a.newerThanCompaction(final):
			reason, failPrefix = ReasonIncomplete, "Incomplete response recovery failed: "
		case final.StopReason == llm.StopError || final.StopReason == llm.StopAborted || final.StopReason == llm.StopLength:
			return final, nil
		default:
			return a.thresholdMaintenance(ctx, final)
		}
		if !a.Compaction.Enabled || stuck >= 2 {
			return final, nil
		}
		a.emit(&Event{Type: EventAutoCompactionStart, Reason: reason})
		if a.Compaction.Off() {
			a.emit(&Event{Type: EventAutoCompactionEnd, WillRetry: true, ErrorMessage: failPrefix + "compaction is off"})
			return final, nil
		}
		// The failing message stays in the file; it leaves the context.
		a.dropLastAssistant(final)
		res, err := a.compact(ctx, "")
		if err != nil {
			a.emit(&Event{Type: EventAutoCompactionEnd, Aborted: ctx.Err() != nil, WillRetry: true,
				ErrorMessage: failPrefix + err.Error()})
			return final, nil
		}
		a.emit(&Event{Type: EventAutoCompactionEnd, Result: res.JSON(), WillRetry: true})
		n := len(a.messages)
		var werr error
		if final, werr = a.run(ctx, nil); werr != nil {
			return final, werr
		}
		stuck++
		for _, m := range a.messages[min(n, len(a.messages)):] {
			if l := m.LLM; l != nil && l.Role == llm.RoleAssistant && l.StopReason != llm.StopError && l.StopReason != llm.StopAborted {
				stuck = 0
			}
		}
	}
	return final, nil
}

// thresholdMaintenance is §5.6 step 4: prune, then compact when the
// adjusted context is above the threshold, and auto-continue when the
// last message stopped for tool use.
func (a *Agent) thresholdMaintenance(ctx context.Context, final *llm.Message) (*llm.Message, error) {
	if !a.Compaction.Enabled || a.Compaction.Off() {
		return final, nil
	}
	if err := a.prune(); err != nil {
		return final, err
	}
	t := compaction.Threshold(a.Model.ContextWindow, a.Compaction)
	if t <= 0 || compaction.ContextUsage(a.messages, a.pruneSavings()).Tokens <= t {
		return final, nil
	}
	a.emit(&Event{Type: EventAutoCompactionStart, Reason: ReasonThreshold})
	res, err := a.compact(ctx, "")
	if err != nil {
		a.emit(&Event{Type: EventAutoCompactionEnd, Aborted: ctx.Err() != nil, ErrorMessage: "Auto-compaction failed: " + err.Error()})
		return final, nil
	}
	a.emit(&Event{Type: EventAutoCompactionEnd, Result: res.JSON()})
	if !a.Compaction.AutoContinue || final.StopReason != llm.StopToolUse {
		return final, nil
	}
	dev := &llm.Message{Role: llm.RoleDeveloper, Content: []llm.Content{llm.Text(autoContinueText)}, Timestamp: a.now().UnixMilli()}
	return a.run(ctx, []session.Message{session.NewMessage(dev, nil)})
}

// newerThanCompaction reports whether m is newer than the latest
// compaction summary in the context.
func (a *Agent) newerThanCompaction(m *llm.Message) bool {
	for i := len(a.messages) - 1; i >= 0; i-- {
		if a.messages[i].Role == session.RoleCompactionSummary && a.messages[i].LLM != nil {
			return m.Timestamp > a.messages[i].LLM.Timestamp
		}
	}
	return true
}

// dropLastAssistant removes the last assistant message from the context
// when it is m's (matched by timestamp and stop reason).
func (a *Agent) dropLastAssistant(m *llm.Message) {
	for i := len(a.messages) - 1; i >= 0; i-- {
		if l := a.messages[i].LLM; l != nil && l.Role == llm.RoleAssistant {
			if l.Timestamp == m.Timestamp && l.StopReason == m.StopReason {
				a.messages = append(a.messages[:i:i], a.messages[i+1:]...)
			}
			return
		}
	}
}

// NavigateOptions configure NavigateTree.
type NavigateOptions struct {
	// Summarize asks for a branch summary (only when
	// branchSummary.enabled).
	Summarize bool
	// CustomInstructions replace the branch-summary prompt.
	CustomInstructions string
}

// Navigation is the outcome of NavigateTree.
type Navigation struct {
	// Leaf is the new leaf ("" = the next append is a root).
	Leaf string
	// Prefill is the chosen user or custom message's text, for the editor.
	Prefill string
	// SummaryEntryID is the branch_summary entry written ("" when none).
	SummaryEntryID string
	// Noop is true when the target was already the leaf (NoopText).
	Noop bool
}

// NoopText is what a UI shows when the chosen entry is the leaf (§3.12).
const NoopText = "Already at this point"

// NavigateTree moves the leaf within the session file (§3.12): a user or
// custom message moves to its parent with its text as Prefill, anything
// else to the entry itself. With opt.Summarize and branchSummary.enabled,
// the abandoned branch is summarised into a branch_summary under the new
// leaf (§6.10); a failed or cancelled summary leaves the tree unchanged.
func (a *Agent) NavigateTree(ctx context.Context, targetID string, opt NavigateOptions) (Navigation, error) {
	a.load()
	target, ok := a.Session.Entry(targetID)
	if !ok {
		return Navigation{}, fmt.Errorf("Entry %s not found", targetID)
	}
	oldLeaf := a.Session.Leaf()
	if targetID == oldLeaf {
		return Navigation{Leaf: oldLeaf, Noop: true}, nil
	}
	nav := Navigation{Leaf: targetID}
	switch target.Type {
	case session.TypeMessage, session.TypeCustomMessage:
		m := a.Session.EntryMessages([]*session.Entry{target})[0]
		if target.Type == session.TypeCustomMessage || m.Role == string(llm.RoleUser) {
			nav.Leaf = target.ParentID
			if m.LLM != nil {
				for _, c := range m.LLM.Content {
					if c.Type == llm.ContentText {
						nav.Prefill += c.Text
					}
				}
			}
		}
	}
	var summary string
	var details compaction.Details
	if opt.Summarize && a.Compaction.BranchSummaryEnabled {
		oldPath := a.Session.ActivePath()
		entries := compaction.BranchEntries(oldPath, a.Session.PathTo(nav.Leaf))
		prep := compaction.PrepareBranch(entries, a.Session.EntryMessages(entries),
			compaction.BranchBudget(a.Model.ContextWindow, a.Compaction))
		var err error
		summary, details, err = compaction.BranchSummary(ctx, prep, a.summaryOptions(opt.CustomInstructions))
		if err != nil && !errors.Is(err, compaction.ErrNothingToSummarize) {
			return Navigation{}, err
		}
	}
	if nav.Leaf == "" {
		a.Session.ResetLeaf()
	} else if err := a.Session.Branch(nav.Leaf); err != nil {
		return Navigation{}, err
	}
	if summary != "" {
		from := cmp.Or(nav.Leaf, "root")
		d, _ := json.Marshal(details)
		e, err := a.Session.Append(session.TypeBranchSummary, session.BranchSummary{FromID: from, Summary: summary, Details: d})
		if err != nil {
			return Navigation{}, fmt.Errorf("session: %w", err)
		}
		nav.SummaryEntryID = e.ID
	}
	a.messages = a.Session.BuildContext().Messages
	return nav, nil
}
