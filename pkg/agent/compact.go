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

// Reasons of auto_compaction_start.
const (
	ReasonThreshold  = "threshold"
	ReasonOverflow   = "overflow"
	ReasonIncomplete = "incomplete"
)

// autoContinueText is the auto-continue developer message.
const autoContinueText = "Continue if you have next steps."

// summaryAttempts bounds the summariser calls.
const summaryAttempts = 3

// Compact is the manual compaction (/compact) with the built-in
// compactor: it aborts an active run first, ignores compaction.enabled,
// prunes tool outputs and returns the CompactionResult.
// compaction.ErrNothing ("Nothing to compact") when there is nothing to
// summarise.
func (a *Agent) Compact(ctx context.Context, customInstructions string) (*compaction.Result, error) {
	<-a.Abort()
	a.setCompacting(true)
	defer a.setCompacting(false)
	return a.compact(ctx, customInstructions)
}

// BuiltinCompactor is the built-in Compactor over the Compaction
// settings: context-full compaction with the current model. With the
// strategy "off" only manual compactions run.
func (a *Agent) BuiltinCompactor() CompactFunc {
	return func(ctx context.Context, reason, instructions string) (json.RawMessage, error) {
		if reason != "manual" && a.Compaction.Off() {
			return nil, errors.New("compaction is off")
		}
		res, err := a.compact(ctx, instructions)
		if errors.Is(err, compaction.ErrNothing) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return res.JSON(), nil
	}
}

// context returns a snapshot of the in-memory context.
func (a *Agent) context() []session.Message {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.load()
	return a.messages
}

// compact prunes, prepares, summarises with the current model, appends
// the compaction entry and rebuilds the in-memory context.
func (a *Agent) compact(ctx context.Context, instructions string) (*compaction.Result, error) {
	if err := a.prune(); err != nil {
		return nil, err
	}
	path := a.Session.ActivePath()
	msgs := a.Session.EntryMessages(path)
	usage := compaction.ContextUsage(a.context(), a.pruneSavings())
	prep, err := compaction.Prepare(path, msgs, a.Compaction, usage, a.CurrentModel().ContextWindow)
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
	a.ReloadContext()
	a.resyncTodos()
	a.st.mu.Lock()
	a.pruned = 0
	a.st.mu.Unlock()
	return res, nil
}

func (a *Agent) summaryOptions(instructions string) compaction.Options {
	return compaction.Options{Complete: a.complete, Settings: a.Compaction, ContextWindow: a.CurrentModel().ContextWindow,
		CustomInstructions: instructions, Cwd: a.Session.Header().Cwd}
}

// prune prunes tool outputs on the active path: the pruned tool results are
// rewritten in the file and the context rebuilt (failed assistant
// messages the loop dropped from memory come back; the payload repairs
// leave them out all the same). The saving is remembered against the
// usage that measured them.
func (a *Agent) prune() error {
	path := a.Session.ActivePath()
	p := compaction.Prune(path, a.Session.EntryMessages(path), a.now().UnixMilli())
	if len(p.Replace) == 0 {
		return nil
	}
	if err := a.Session.ReplaceMessages(p.Replace); err != nil {
		return err
	}
	a.ReloadContext()
	msgs := a.context()
	if u := compaction.ContextUsage(msgs, 0); u.Index >= 0 {
		a.st.mu.Lock()
		a.pruned += p.Saved
		a.prunedAt = msgs[u.Index].LLM.Timestamp
		a.st.mu.Unlock()
	}
	return nil
}

// pruneSavings is the saving made since the current usage was measured.
func (a *Agent) pruneSavings() int {
	msgs := a.context()
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if u := compaction.ContextUsage(msgs, 0); u.Index >= 0 && msgs[u.Index].LLM.Timestamp == a.prunedAt {
		return a.pruned
	}
	return 0
}

func (a *Agent) resyncTodos() {
	if a.Todos != nil {
		a.Todos.Set(RestoreTodos(a.Session))
	}
}

// progressSince reports whether an assistant turn after the first n
// context messages succeeded.
func (a *Agent) progressSince(n int) bool {
	msgs := a.context()
	for _, m := range msgs[min(n, len(msgs)):] {
		if l := m.LLM; l != nil && l.Role == llm.RoleAssistant && l.StopReason != llm.StopError && l.StopReason != llm.StopAborted {
			return true
		}
	}
	return false
}

// complete is the summariser call (the current model and credentials,
// thinking off), tried at most 3 times when the
// failure is transient.
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
	model := a.CurrentModel()
	if model.MaxTokens > 0 {
		maxTokens = min(maxTokens, model.MaxTokens)
	}
	req := &llm.Request{Model: model.WireID(), Stream: true, MaxTokens: max(maxTokens, 256),
		System:    []llm.SystemBlock{{Text: system}},
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text(prompt)}, Timestamp: a.now().UnixMilli()}},
		SessionID: a.Session.Header().ID, DisableReasoning: model.Reasoning}
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
	tc := a.turnConfig()
	cred := tc.cred
	if a.Credentials != nil {
		var err error
		if cred, err = a.Credentials(ctx); err != nil {
			return fail(err)
		}
	}
	st, err := tc.provider.Stream(ctx, req, &tc.model, cred)
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

// maintainThreshold runs after a run that ended well: prune
// tool outputs, then compact through the Compactor when the adjusted
// context is above the threshold, and auto-continue when the last message
// stopped for tool use. A failure is reported in auto_compaction_end and
// leaves final as it is.
func (a *Agent) maintainThreshold(ctx context.Context, final *llm.Message, err error) (*llm.Message, error) {
	if err != nil || final == nil || ctx.Err() != nil || !a.canAutoCompact() || !a.Compaction.Enabled || a.Compaction.Off() {
		return final, err
	}
	switch final.StopReason {
	case llm.StopError, llm.StopAborted, llm.StopLength:
		return final, nil
	}
	if err := a.prune(); err != nil {
		return final, err
	}
	t := compaction.Threshold(a.CurrentModel().ContextWindow, a.Compaction)
	if t <= 0 || compaction.ContextUsage(a.context(), a.pruneSavings()).Tokens <= t {
		return final, nil
	}
	a.emit(&Event{Type: EventAutoCompactionStart, Reason: ReasonThreshold})
	a.setCompacting(true)
	res, cerr := a.Compactor(ctx, ReasonThreshold, "")
	a.setCompacting(false)
	if cerr == nil && res == nil {
		cerr = compaction.ErrNothing
	}
	if cerr != nil {
		a.emit(&Event{Type: EventAutoCompactionEnd, Aborted: ctx.Err() != nil, ErrorMessage: "Auto-compaction failed: " + cerr.Error()})
		return final, nil
	}
	a.emit(&Event{Type: EventAutoCompactionEnd, Result: res})
	if !a.Compaction.AutoContinue || final.StopReason != llm.StopToolUse {
		return final, nil
	}
	dev := &llm.Message{Role: llm.RoleDeveloper, Content: []llm.Content{llm.Text(autoContinueText)}, Timestamp: a.now().UnixMilli()}
	final, err = a.run(ctx, []session.Message{session.NewMessage(dev, nil)})
	return a.recover(ctx, final, err)
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

// NoopText is what a UI shows when the chosen entry is the leaf.
const NoopText = "Already at this point"

// NavigateTree moves the leaf within the session file: a user or
// custom message moves to its parent with its text as Prefill, anything
// else to the entry itself. With opt.Summarize and branchSummary.enabled,
// the abandoned branch is summarised into a branch_summary under the new
// leaf; a failed or cancelled summary leaves the tree unchanged.
func (a *Agent) NavigateTree(ctx context.Context, targetID string, opt NavigateOptions) (Navigation, error) {
	if a.IsStreaming() {
		return Navigation{}, ErrBusy
	}
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
			compaction.BranchBudget(a.CurrentModel().ContextWindow, a.Compaction))
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
	a.ReloadContext()
	a.resyncTodos()
	return nav, nil
}
