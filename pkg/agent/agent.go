// Package agent is the coding agent's loop: runs and turns
// streamed through the canonical pkg/llm events, tool calls executed in
// model order with argument validation, abort, the auto-retry policy, and
// persistence of every finalised message to the session.
//
// Session-level API, for the modes (print, json, rpc, interactive), safe
// to call from any goroutine while a run is active:
//
//   - Prompt / PromptContent run synchronously; Start schedules a run in a
//     goroutine and returns at once. Both fail with ErrBusy while a run is
//     active (one run at a time).
//   - Steer queues a message for the next steering check (after the
//     running tool in "immediate" interrupt mode, whose remaining calls are
//     skipped, else before the next turn); FollowUp queues one for when
//     the run would end. SetSteeringMode / SetFollowUpMode ("one-at-a-time"
//     or "all"), SetInterruptMode ("immediate" or "wait"), Modes,
//     QueuedCounts, ClearQueues.
//   - Abort cancels a retry sleep and the run and returns a channel closed
//     once the run has ended; AbortRetry cancels only the retry sleep.
//   - IsStreaming, IsCompacting, CurrentModel, CurrentThinkingLevel,
//     SessionID, SessionFile, MessageCount, Messages; SetModel and
//     SetThinkingLevel (effective from the next turn, persisted as entries);
//     SetAutoRetry / SetAutoCompaction (runtime overrides, not persisted).
//   - Subscribe adds event listeners (called synchronously in order, after
//     the Emit field); EmitEvent lets session-level code emit.
//   - SetSession switches files (aborts, clears the queues); ReloadContext
//     rebuilds the in-memory context from the session; RestoreModel and
//     RestoreThinkingLevel adopt a switched-to session's own settings;
//     AppendMessage adds a finished message (a user bash run) without a run.
//   - Compactor is the hook compaction fills in: the overflow and
//     truncated-output recoveries call it between auto_compaction_start
//     and auto_compaction_end, then continue the run; CompactNow is the
//     manual path (RPC compact). Without it those errors end the run.
//   - RefreshCredential: an upstream 401/403 force-refreshes the
//     credential once and the turn is retried.
//
// Sub-packages hold the session files (session) and the built-in tools
// (tools). The modes are wired in cmd/omp.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ompgo/omp/pkg/agent/compaction"
	"github.com/ompgo/omp/pkg/agent/secrets"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// Agent runs prompts against one model over one session, one run at a
// time. Set the fields before the first run; afterwards change them
// only through the methods (SetModel, SetThinkingLevel, …), which are
// safe to call from any goroutine while a run is active.
type Agent struct {
	// Session receives every finalised message (required).
	Session *session.File
	// Provider streams model turns (required).
	Provider llm.Provider
	// Model is the active model (required).
	Model llm.Model
	// Credential authenticates the provider.
	Credential llm.Credential
	// Credentials, when set, is asked for the credential before every
	// turn instead of using Credential (broker mode: the snapshot's
	// current access token, refreshed through the broker near expiry).
	Credentials func(ctx context.Context) (llm.Credential, error)
	// Tools is the active tool set (nil: no tools).
	Tools *tools.Set
	// SystemPrompt is sent as the system block ("" = none).
	SystemPrompt string
	// ThinkingLevel is off|minimal|low|medium|high|xhigh ("" = provider default).
	ThinkingLevel string
	// Secrets restores secret placeholders in the model's tool-call
	// arguments before they are validated and run (nil:
	// none). Obfuscating requests is the Provider's job (secrets.Wrap).
	Secrets *secrets.Obfuscator
	// Retry is the auto-retry policy (zero: disabled).
	Retry Retry
	// Emit receives every event, synchronously, in order (nil: dropped).
	Emit func(*Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Compaction are the compaction settings used by BuiltinCompactor and the
	// threshold maintenance (zero: no threshold compaction; use
	// compaction.Defaults).
	Compaction compaction.Settings
	// Todos, when set, is the todo cache resynced from the branch after a
	// compaction or a tree move.
	Todos *tools.TodoList
	// RefreshCredential, when set, force-refreshes the credential after an
	// upstream 401/403 (broker mode: a refresh through the broker); the
	// turn is then retried once with the new credential.
	RefreshCredential func(ctx context.Context) (llm.Credential, error)
	// OnUsageLimit, when set, is told that a turn failed on a provider
	// usage limit (a 429 that reads as one): the model and
	// credential of that turn and the upstream's retry hint. The credential
	// source blocks that account
	// (and, in broker mode, the fleet learns it). switched reports that
	// another account is free, and the turn is then retried at once with
	// the credential Credentials picks next; otherwise the auto-retry policy
	// decides.
	OnUsageLimit func(ctx context.Context, failed UsageLimit) (switched bool)
	// OnPolicyDenied, when set, is told that the turn's credential was
	// refused by an account policy (llm.PolicyDenialOf: the account may not
	// do this, its token is valid). The credential source
	// blocks that account — for the model only when ModelOnly — and returns
	// another account's credential to retry the turn once with, or false.
	// A policy denial never force-refreshes the credential.
	OnPolicyDenied func(ctx context.Context, denied PolicyDenied) (llm.Credential, bool)
	// Compactor compacts the context (h/agent-compact provides it). The
	// overflow and truncated-output recoveries call it; without it
	// those errors end the run as they are.
	Compactor CompactFunc

	st       state
	messages []session.Message
	loaded   bool
	// lastTurn is the model and credential of the latest turn (what a
	// usage limit is reported against).
	lastTurn turnConfig
	// retryAfter is the upstream's retry hint of the latest failed turn.
	retryAfter time.Duration
	// todoFailed queues the todo-failure reminder for the next prompt.
	todoFailed bool
	// sessionState is what the providers learned during the session whose
	// id is sessionStateFor (their fallbacks); another session starts afresh.
	sessionState    *llm.SessionState
	sessionStateFor string
	// pendingEnd is the agent_end of the run that just ended, held until
	// the agent has decided whether another run follows (endRun).
	pendingEnd *Event
	// pruned is the tool-output pruning saving made since the usage of the assistant
	// message with timestamp prunedAt was measured.
	pruned   int
	prunedAt int64
}

// todoReminder is the hidden next-turn message after a failed todo call.
const todoReminder = "<system-reminder>Your last todo call failed, so the todo list was not updated. Fix the errors and call todo again; progress is not visible to the user until it succeeds.</system-reminder>"

// Messages returns the in-memory context.
func (a *Agent) Messages() []session.Message {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.load()
	return slices.Clone(a.messages)
}

// load builds the context once; the caller holds st.mu or is the loop.
func (a *Agent) load() {
	if !a.loaded {
		a.messages = a.Session.BuildContext().Messages
		a.loaded = true
	}
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Agent) emit(e *Event) {
	if a.Emit != nil {
		a.Emit(e)
	}
	a.st.mu.Lock()
	subs := a.st.subList
	a.st.mu.Unlock()
	for _, fn := range subs {
		fn(e)
	}
}

// addMessage appends m to the in-memory context.
func (a *Agent) addMessage(m session.Message) {
	a.st.mu.Lock()
	a.messages = append(a.messages, m)
	a.st.mu.Unlock()
}

// setMessages replaces the in-memory context (the loop's writes take the
// lock so that other goroutines may read it).
func (a *Agent) setMessages(m []session.Message) {
	a.st.mu.Lock()
	a.messages = m
	a.st.mu.Unlock()
}

func (a *Agent) sleep(ctx context.Context, d time.Duration) error {
	if a.Sleep != nil {
		return a.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Prompt appends a user message with text and runs until the agent stops,
// retrying transient failures and recovering from overflow and truncated
// output. It returns the final assistant message; its
// StopReason says how the run ended. An error means the session could not
// be written, or ErrBusy when a run is already active.
func (a *Agent) Prompt(ctx context.Context, text string) (*llm.Message, error) {
	return a.PromptContent(ctx, []llm.Content{llm.Text(text)})
}

// PromptContent is Prompt with a user message of text and image blocks.
func (a *Agent) PromptContent(ctx context.Context, content []llm.Content) (*llm.Message, error) {
	rctx, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer a.end()
	return a.prompt(rctx, content)
}

func (a *Agent) prompt(ctx context.Context, content []llm.Content) (*llm.Message, error) {
	a.st.mu.Lock()
	a.load()
	a.st.mu.Unlock()
	if a.todoFailed {
		a.todoFailed = false
		if err := a.appendCustomMessage("todo-error-reminder", todoReminder, false); err != nil {
			return nil, err
		}
	}
	user := &llm.Message{Role: llm.RoleUser, Content: content, Timestamp: a.now().UnixMilli()}
	final, err := a.run(ctx, []session.Message{session.NewMessage(user, nil)})
	for {
		final, err = a.recover(ctx, final, err)
		final, err = a.maintainThreshold(ctx, final, err)
		queued := a.stranded(ctx, final, err)
		if len(queued) == 0 {
			break
		}
		a.endRun(nextForInput)
		final, err = a.run(ctx, queued)
	}
	a.endRun(nextNone)
	return final, err
}

// next says what follows a run: nothing, a run the agent starts for its
// own work (a retry, a recovery, an auto-continue), or a run that
// delivers queued input.
type next int

const (
	nextNone next = iota
	nextOwnWork
	nextForInput
)

// endRun emits the held agent_end of the run that just ended, tagged with
// what follows it (no-op when none is held).
func (a *Agent) endRun(n next) {
	e := a.pendingEnd
	if e == nil {
		return
	}
	a.pendingEnd = nil
	e.IsTerminal = n == nextNone
	e.Yielded = n != nextOwnWork
	a.emit(e)
}

// stranded takes the steering or follow-up messages queued after the
// run's last look at its queues (or left there by a run that ended on
// an error), to deliver them in another run; nothing after an abort.
func (a *Agent) stranded(ctx context.Context, final *llm.Message, err error) []session.Message {
	if err != nil || final == nil || ctx.Err() != nil || final.StopReason == llm.StopAborted {
		return nil
	}
	if steer := a.dequeue(false); len(steer) > 0 {
		return steer
	}
	return a.dequeue(true)
}

// appendCustomMessage records a custom_message entry and adds it to
// the context as a custom message.
func (a *Agent) appendCustomMessage(customType, text string, display bool) error {
	content, _ := json.Marshal(text)
	if _, err := a.Session.Append(session.TypeCustomMessage, session.CustomMessage{CustomType: customType,
		Content: content, Display: display}); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	raw, _ := json.Marshal(map[string]any{"role": session.RoleCustom, "customType": customType, "content": text,
		"display": display, "timestamp": a.now().UnixMilli()})
	m, err := session.DecodeMessage(raw)
	if err != nil {
		return err
	}
	a.addMessage(m)
	return nil
}

// persist appends m to the session and the in-memory context.
func (a *Agent) persist(m session.Message) error {
	a.addMessage(m)
	if _, err := a.Session.AppendMessage(m); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// run is one agent_start … agent_end cycle. Its agent_end is held until
// the caller knows what follows (endRun); a run started while one is
// still held continues the agent's own work.
func (a *Agent) run(ctx context.Context, newMessages []session.Message) (*llm.Message, error) {
	a.endRun(nextOwnWork)
	a.emit(&Event{Type: EventAgentStart})
	var produced []json.RawMessage
	var final *llm.Message
	var werr error
	for {
		a.emit(&Event{Type: EventTurnStart})
		for _, m := range newMessages {
			a.emit(&Event{Type: EventMessageStart, Message: m.Raw})
			if err := a.persist(m); err != nil && werr == nil {
				werr = err
			}
			a.emit(&Event{Type: EventMessageEnd, Message: m.Raw})
			produced = append(produced, m.Raw)
		}
		newMessages = nil

		final = a.stream(ctx)
		fm := session.NewMessage(final, nil)
		if err := a.persist(fm); err != nil && werr == nil {
			werr = err
		}
		a.emit(&Event{Type: EventMessageEnd, Message: fm.Raw})
		produced = append(produced, fm.Raw)
		if final.StopReason == llm.StopError || final.StopReason == llm.StopAborted {
			a.emit(&Event{Type: EventTurnEnd, Message: fm.Raw})
			break
		}
		var results []json.RawMessage
		aborted, skip := false, false
		for _, c := range final.Content {
			if c.Type != llm.ContentToolCall {
				continue
			}
			var rm session.Message
			if skip {
				rm = a.skipTool(c)
			} else {
				var abort bool
				rm, abort = a.executeInterruptible(ctx, c)
				aborted = abort
			}
			if err := a.persist(rm); err != nil && werr == nil {
				werr = err
			}
			a.emit(&Event{Type: EventMessageStart, Message: rm.Raw})
			a.emit(&Event{Type: EventMessageEnd, Message: rm.Raw})
			results = append(results, rm.Raw)
			produced = append(produced, rm.Raw)
			if aborted {
				break
			}
			if !skip && a.interruptNow() && a.hasSteering() {
				skip = true
			}
		}
		a.emit(&Event{Type: EventTurnEnd, Message: fm.Raw, ToolResults: results})
		if aborted || ctx.Err() != nil {
			final.StopReason, final.ErrorMessage = llm.StopAborted, "Request was aborted"
			break
		}
		steer := a.dequeue(false)
		if len(results) > 0 || len(steer) > 0 {
			newMessages = steer
			continue
		}
		if newMessages = a.dequeue(true); len(newMessages) > 0 {
			continue
		}
		break
	}
	a.pendingEnd = &Event{Type: EventAgentEnd, Messages: produced}
	return final, werr
}

// stream runs one model turn and returns the finalised assistant message.
// Every failure, cancellation included, becomes an error or aborted
// message rather than a Go error.
func (a *Agent) stream(ctx context.Context) *llm.Message {
	tc := a.turnConfig()
	req := a.request(tc)
	a.retryAfter = 0
	placeholder := &llm.Message{Role: llm.RoleAssistant, API: tc.model.API, Provider: tc.model.Provider, Model: tc.model.ID,
		Timestamp: a.now().UnixMilli()}
	fail := func(partial *llm.Message, err error) *llm.Message {
		m := *partial
		m.Content = slices.Clone(partial.Content)
		m.StopReason, m.ErrorMessage = llm.StopError, err.Error()
		var ue *llm.UpstreamError
		if errors.As(err, &ue) {
			m.ErrorStatus = ue.Status
			if ue.Message != "" {
				m.ErrorMessage = ue.Message
			}
			a.retryAfter = ue.RetryAfter
		}
		if ctx.Err() != nil {
			m.StopReason, m.ErrorMessage = llm.StopAborted, "Request was aborted"
		}
		if m.Timestamp == 0 {
			m.Timestamp = a.now().UnixMilli()
		}
		return &m
	}
	cred := tc.cred
	var err error
	if a.Credentials != nil {
		if cred, err = a.Credentials(ctx); err != nil {
			a.emit(&Event{Type: EventMessageStart, Message: session.EncodeMessage(placeholder, nil)})
			return fail(placeholder, err)
		}
	}
	a.lastTurn = turnConfig{model: tc.model, cred: cred}
	st, err := tc.provider.Stream(ctx, req, &tc.model, cred)
	policy := llm.NoPolicyDenial
	if err != nil {
		policy = llm.PolicyDenialOf(err, tc.model.Provider, tc.model.ID)
	}
	if (policy == llm.AccountPolicy || policy == llm.ModelPolicy) && a.OnPolicyDenied != nil && ctx.Err() == nil {
		// The account may not do this: another account, not a new token.
		if next, ok := a.OnPolicyDenied(ctx, PolicyDenied{Model: tc.model, Credential: cred, ModelOnly: policy == llm.ModelPolicy}); ok {
			a.lastTurn.cred = next
			st, err = tc.provider.Stream(ctx, req, &tc.model, next)
		}
	}
	if err != nil && policy == llm.NoPolicyDenial && a.RefreshCredential != nil && authRejected(err) && ctx.Err() == nil {
		// A rejected credential is refreshed once and the turn retried.
		if fresh, rerr := a.RefreshCredential(ctx); rerr == nil {
			a.lastTurn.cred = fresh
			st, err = tc.provider.Stream(ctx, req, &tc.model, fresh)
		}
	}
	if err != nil {
		a.emit(&Event{Type: EventMessageStart, Message: session.EncodeMessage(placeholder, nil)})
		return fail(placeholder, err)
	}
	defer st.Close()
	started := false
	partial := placeholder
	for ev := range st.Events() {
		if ev.Partial != nil {
			partial = ev.Partial
		}
		if ctx.Err() != nil {
			break
		}
		if !started {
			started = true
			a.emit(&Event{Type: EventMessageStart, Message: session.EncodeMessage(placeholder, nil)})
		}
		switch ev.Type {
		case llm.EventDone:
			m := *ev.Partial
			m.Content = slices.Clone(m.Content)
			if m.Timestamp == 0 {
				m.Timestamp = placeholder.Timestamp
			}
			a.emit(&Event{Type: EventMessageUpdate, Assistant: &ev})
			return &m
		case llm.EventError:
			e := ev.Err
			if e == nil {
				e = errors.New(ev.Partial.ErrorMessage)
			}
			a.emit(&Event{Type: EventMessageUpdate, Assistant: &ev})
			return fail(ev.Partial, e)
		default:
			a.emit(&Event{Type: EventMessageUpdate, Assistant: &ev})
		}
	}
	if !started {
		a.emit(&Event{Type: EventMessageStart, Message: session.EncodeMessage(placeholder, nil)})
	}
	if ctx.Err() != nil {
		return fail(partial, ctx.Err())
	}
	return fail(partial, llm.ErrTruncated)
}

func (a *Agent) interruptNow() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.interruptModeLocked() == InterruptNow
}

// executeInterruptible runs a tool call under a context that a steering
// interrupt also cancels; a tool cut short by steering is an error
// result, not an abort of the run.
func (a *Agent) executeInterruptible(ctx context.Context, c llm.Content) (session.Message, bool) {
	tctx, cancel := context.WithCancel(ctx)
	a.st.mu.Lock()
	a.st.toolCancel, a.st.steerCut = cancel, false
	a.st.mu.Unlock()
	rm, abort := a.execute(tctx, c)
	a.st.mu.Lock()
	cut := a.st.steerCut
	a.st.toolCancel, a.st.steerCut = nil, false
	a.st.mu.Unlock()
	cancel()
	if abort && cut && ctx.Err() == nil {
		abort = false
	}
	return rm, abort
}

// skipTool is the error result of a call skipped by a steering interrupt.
func (a *Agent) skipTool(c llm.Content) session.Message {
	args := c.Arguments
	if args == nil {
		args = json.RawMessage("{}")
	}
	res := tools.TextResult(skippedText, nil)
	a.emit(&Event{Type: EventToolExecutionStart, ToolCallID: c.ID, ToolName: c.Name, Args: args})
	a.emit(&Event{Type: EventToolExecutionEnd, ToolCallID: c.ID, ToolName: c.Name, Result: resultJSON(res), IsError: true})
	m := &llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, Content: res.Content,
		IsError: true, Timestamp: a.now().UnixMilli()}
	return session.NewMessage(m, nil)
}

// authRejected reports an upstream 401 or 403.
func authRejected(err error) bool {
	var ue *llm.UpstreamError
	return errors.As(err, &ue) && (ue.Status == 401 || ue.Status == 403)
}

// execute runs one tool call and returns its toolResult message and
// whether the run must stop (a ToolAbortError or an aborted run).
func (a *Agent) execute(ctx context.Context, c llm.Content) (session.Message, bool) {
	args := c.Arguments
	if args == nil {
		args = json.RawMessage("{}")
	}
	args = a.Secrets.RestoreArguments(args)
	a.emit(&Event{Type: EventToolExecutionStart, ToolCallID: c.ID, ToolName: c.Name, Args: args})
	var res tools.Result
	isErr := true
	var abort error
	switch {
	case a.Tools == nil:
		res = tools.TextResult("Tool "+c.Name+" not found", nil)
	case ctx.Err() != nil:
		res, abort = tools.TextResult("Request was aborted", nil), ctx.Err()
	default:
		res, isErr, abort = a.Tools.Execute(ctx, c.Name, args, func(p tools.Result) {
			a.emit(&Event{Type: EventToolExecutionUpdate, ToolCallID: c.ID, ToolName: c.Name, Args: args, Result: resultJSON(p)})
		})
	}
	a.emit(&Event{Type: EventToolExecutionEnd, ToolCallID: c.ID, ToolName: c.Name, Result: resultJSON(res), IsError: isErr})
	if c.Name == "todo" && isErr {
		a.todoFailed = true
	}
	var details json.RawMessage
	if res.Details != nil {
		details, _ = json.Marshal(res.Details)
	}
	m := &llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, Content: res.Content,
		IsError: isErr, Timestamp: a.now().UnixMilli()}
	return session.NewMessage(m, details), abort != nil
}

func resultJSON(r tools.Result) json.RawMessage {
	v := struct {
		Content []llm.Content `json:"content"`
		Details any           `json:"details,omitempty"`
	}{r.Content, r.Details}
	if v.Content == nil {
		v.Content = []llm.Content{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{"content":[]}`)
	}
	return b
}
