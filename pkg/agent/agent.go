// Package agent is the coding agent's loop (agent.md §5): runs and turns
// streamed through the canonical pkg/llm events, tool calls executed in
// model order with argument validation, abort, the D21 retry policy, and
// persistence of every finalised message to the session.
//
// Sub-packages hold the session files (session) and the built-in tools
// (tools). The modes (print, json) are wired in cmd/omp.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ompgo/omp/pkg/agent/compaction"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// Agent runs prompts against one model over one session. It is not safe
// for concurrent use: one run at a time (§2.2).
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
	// Retry is the auto-retry policy (zero: disabled).
	Retry Retry
	// Emit receives every event, synchronously, in order (nil: dropped).
	Emit func(*Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Compaction are the §6.1 settings (zero: no automatic compaction;
	// use compaction.Defaults).
	Compaction compaction.Settings

	messages []session.Message
	loaded   bool
	// retryAfter is the upstream's retry hint of the latest failed turn.
	retryAfter time.Duration
	// todoFailed queues the D22 reminder for the next prompt.
	todoFailed bool
	// pruned is the D26 saving made since the usage of the assistant
	// message with timestamp prunedAt was measured (D24).
	pruned   int
	prunedAt int64
}

// todoReminder is D22's hidden next-turn message after a failed todo call.
const todoReminder = "<system-reminder>Your last todo call failed, so the todo list was not updated. Fix the errors and call todo again; progress is not visible to the user until it succeeds.</system-reminder>"

// Messages returns the in-memory context.
func (a *Agent) Messages() []session.Message {
	a.load()
	return slices.Clone(a.messages)
}

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
// retrying transient failures (§5.6, §5.7). It returns the final assistant
// message; its StopReason says how the run ended. An error means the
// session could not be written.
func (a *Agent) Prompt(ctx context.Context, text string) (*llm.Message, error) {
	return a.PromptContent(ctx, []llm.Content{llm.Text(text)})
}

// PromptContent is Prompt with a user message of text and image blocks.
// After the run, overflow and truncated-output recovery and threshold
// compaction run as §5.6 says (when Compaction.Enabled).
func (a *Agent) PromptContent(ctx context.Context, content []llm.Content) (*llm.Message, error) {
	final, err := a.promptContent(ctx, content)
	if err != nil {
		return final, err
	}
	return a.maintain(ctx, final)
}

func (a *Agent) promptContent(ctx context.Context, content []llm.Content) (*llm.Message, error) {
	a.load()
	if a.todoFailed {
		a.todoFailed = false
		if err := a.appendCustomMessage("todo-error-reminder", todoReminder, false); err != nil {
			return nil, err
		}
	}
	user := &llm.Message{Role: llm.RoleUser, Content: content, Timestamp: a.now().UnixMilli()}
	final, err := a.run(ctx, []session.Message{session.NewMessage(user, nil)})
	if err != nil {
		return final, err
	}
	if final == nil || !a.Retry.Enabled || !IsTransient(final) || ctx.Err() != nil {
		return final, nil
	}
	// D21: every auto_retry_start is closed by one auto_retry_end.
	for attempt := 1; ; attempt++ {
		delay, ok := a.Retry.delay(attempt, a.retryAfter)
		if attempt > a.Retry.MaxRetries || !ok {
			if attempt > 1 {
				a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt - 1, FinalError: final.ErrorMessage})
			}
			return final, nil
		}
		a.emit(&Event{Type: EventAutoRetryStart, Attempt: attempt, MaxAttempts: a.Retry.MaxRetries,
			DelayMs: delay.Milliseconds(), ErrorMessage: final.ErrorMessage})
		// The failed message stays in the file; §3.9 repairs skip it.
		a.dropLastAssistantError()
		if err := a.sleep(ctx, delay); err != nil {
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: "Retry cancelled"})
			final.StopReason, final.ErrorMessage = llm.StopAborted, "Request was aborted"
			return final, nil
		}
		if final, err = a.run(ctx, nil); err != nil {
			return final, err
		}
		switch {
		case final.StopReason == llm.StopAborted:
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: "Retry cancelled"})
			return final, nil
		case final.StopReason != llm.StopError:
			a.emit(&Event{Type: EventAutoRetryEnd, Success: true, Attempt: attempt})
			return final, nil
		case !IsTransient(final):
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: final.ErrorMessage})
			return final, nil
		}
	}
}

func (a *Agent) dropLastAssistantError() {
	for i := len(a.messages) - 1; i >= 0; i-- {
		if m := a.messages[i].LLM; m != nil && m.Role == llm.RoleAssistant {
			if m.StopReason == llm.StopError {
				a.messages = slices.Delete(a.messages, i, i+1)
			}
			return
		}
	}
}

// appendCustomMessage records a custom_message entry (§3.3) and adds it to
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
	a.messages = append(a.messages, m)
	return nil
}

// persist appends m to the session and the in-memory context.
func (a *Agent) persist(m session.Message) error {
	a.messages = append(a.messages, m)
	if _, err := a.Session.AppendMessage(m); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// run is one agent_start … agent_end cycle (§5.2).
func (a *Agent) run(ctx context.Context, newMessages []session.Message) (*llm.Message, error) {
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
		aborted := false
		for _, c := range final.Content {
			if c.Type != llm.ContentToolCall {
				continue
			}
			rm, abort := a.execute(ctx, c)
			if err := a.persist(rm); err != nil && werr == nil {
				werr = err
			}
			a.emit(&Event{Type: EventMessageStart, Message: rm.Raw})
			a.emit(&Event{Type: EventMessageEnd, Message: rm.Raw})
			results = append(results, rm.Raw)
			produced = append(produced, rm.Raw)
			if abort {
				aborted = true
				break
			}
		}
		a.emit(&Event{Type: EventTurnEnd, Message: fm.Raw, ToolResults: results})
		if aborted || ctx.Err() != nil {
			final.StopReason, final.ErrorMessage = llm.StopAborted, "Request was aborted"
			break
		}
		if len(results) == 0 {
			break
		}
	}
	a.emit(&Event{Type: EventAgentEnd, Messages: produced})
	return final, werr
}

// stream runs one model turn and returns the finalised assistant message.
// Every failure, cancellation included, becomes an error or aborted
// message rather than a Go error.
func (a *Agent) stream(ctx context.Context) *llm.Message {
	req := a.request()
	a.retryAfter = 0
	placeholder := &llm.Message{Role: llm.RoleAssistant, API: a.Model.API, Provider: a.Model.Provider, Model: a.Model.ID,
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
	cred := a.Credential
	var err error
	if a.Credentials != nil {
		if cred, err = a.Credentials(ctx); err != nil {
			a.emit(&Event{Type: EventMessageStart, Message: session.EncodeMessage(placeholder, nil)})
			return fail(placeholder, err)
		}
	}
	st, err := a.Provider.Stream(ctx, req, a.Model, cred)
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

// execute runs one tool call and returns its toolResult message and
// whether the run must stop (a ToolAbortError or an aborted run).
func (a *Agent) execute(ctx context.Context, c llm.Content) (session.Message, bool) {
	args := c.Arguments
	if args == nil {
		args = json.RawMessage("{}")
	}
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
