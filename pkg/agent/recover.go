package agent

import (
	"context"
	"slices"

	"github.com/ompgo/omp/pkg/llm"
)

// After a run: usage-limit account switches, the auto-retry, overflow and truncated-output recovery through the Compactor.

// recover runs after a run: auto-retry of transient errors, then
// overflow and truncated-output recovery through the Compactor, each
// followed by a continue(); each recovery runs once per prompt, again
// only after a continued run that made progress (a long run may fill the
// window several times).
func (a *Agent) recover(ctx context.Context, final *llm.Message, err error) (*llm.Message, error) {
	var overflowDone, incompleteDone bool
	switches := 0
	for {
		if err != nil || final == nil || ctx.Err() != nil {
			return final, err
		}
		if a.OnUsageLimit != nil && switches < maxAccountSwitches && IsUsageLimit(final) {
			switches++
			if a.OnUsageLimit(ctx, UsageLimit{Model: a.lastTurn.model, Credential: a.lastTurn.cred, RetryAfter: a.retryAfter}) {
				// Another account is free: retry now on it. The failed
				// message stays in the file; the context repairs skip it.
				a.dropLast(llm.StopError)
				final, err = a.run(ctx, nil)
				continue
			}
		}
		switch {
		case a.autoRetry() && IsTransient(final):
			var again bool
			if final, err, again = a.retry(ctx, final); !again {
				return final, err
			}
		case final.StopReason == llm.StopError && IsOverflow(final) && !overflowDone:
			overflowDone = true
			if !a.canAutoCompact() {
				return final, nil
			}
			a.dropLast(llm.StopError)
			if ok := a.autoCompact(ctx, "overflow", final, "Context overflow recovery failed: "); !ok {
				return final, nil
			}
			n := a.MessageCount()
			final, err = a.run(ctx, nil)
			overflowDone = !a.progressSince(n)
		case final.StopReason == llm.StopLength && !incompleteDone:
			incompleteDone = true
			if !a.canAutoCompact() {
				return final, nil
			}
			a.dropLast(llm.StopLength)
			if ok := a.autoCompact(ctx, "incomplete", final, "Incomplete response recovery failed: "); !ok {
				return final, nil
			}
			n := a.MessageCount()
			final, err = a.run(ctx, nil)
			incompleteDone = !a.progressSince(n)
		default:
			return final, nil
		}
	}
}

func (a *Agent) canAutoCompact() bool { return a.Compactor != nil && a.AutoCompaction() }

// autoCompact runs the Compactor between auto_compaction_start and _end.
// On failure final becomes an error message with prefix + the error.
func (a *Agent) autoCompact(ctx context.Context, reason string, final *llm.Message, prefix string) bool {
	a.emit(&Event{Type: EventAutoCompactionStart, Reason: reason})
	a.setCompacting(true)
	res, err := a.Compactor(ctx, reason, "")
	a.setCompacting(false)
	if err == nil && res == nil {
		err = ErrNothingToCompact
	}
	if err != nil {
		aborted := ctx.Err() != nil
		a.emit(&Event{Type: EventAutoCompactionEnd, Aborted: aborted, ErrorMessage: prefix + err.Error()})
		if aborted {
			final.StopReason, final.ErrorMessage = llm.StopAborted, "Request was aborted"
		} else {
			final.StopReason, final.ErrorMessage = llm.StopError, prefix+err.Error()
		}
		return false
	}
	a.emit(&Event{Type: EventAutoCompactionEnd, Result: res, WillRetry: true})
	return true
}

// retry is the auto-retry sequence after a transient failure. again reports that
// the new final message needs another look by recover (an overflow or a
// truncation after a retry).
func (a *Agent) retry(ctx context.Context, final *llm.Message) (*llm.Message, error, bool) {
	// Every auto_retry_start is closed by one auto_retry_end.
	for attempt := 1; ; attempt++ {
		delay, ok := a.Retry.delay(attempt, a.retryAfter)
		if attempt > a.Retry.MaxRetries || !ok {
			if attempt > 1 {
				a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt - 1, FinalError: final.ErrorMessage})
			}
			return final, nil, false
		}
		a.emit(&Event{Type: EventAutoRetryStart, Attempt: attempt, MaxAttempts: a.Retry.MaxRetries,
			DelayMs: delay.Milliseconds(), ErrorMessage: final.ErrorMessage})
		// The failed message stays in the file; the context repairs skip it.
		a.dropLast(llm.StopError)
		sctx, cancel := context.WithCancel(ctx)
		a.st.mu.Lock()
		a.st.retryCancel = cancel
		a.st.mu.Unlock()
		serr := a.sleep(sctx, delay)
		a.st.mu.Lock()
		a.st.retryCancel = nil
		a.st.mu.Unlock()
		cancel()
		if serr != nil {
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: "Retry cancelled"})
			final.StopReason, final.ErrorMessage = llm.StopAborted, "Request was aborted"
			return final, nil, false
		}
		var err error
		if final, err = a.run(ctx, nil); err != nil {
			return final, err, false
		}
		switch {
		case final.StopReason == llm.StopAborted:
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: "Retry cancelled"})
			return final, nil, false
		case final.StopReason != llm.StopError:
			a.emit(&Event{Type: EventAutoRetryEnd, Success: true, Attempt: attempt})
			return final, nil, true
		case !IsTransient(final):
			a.emit(&Event{Type: EventAutoRetryEnd, Success: false, Attempt: attempt, FinalError: final.ErrorMessage})
			return final, nil, true
		}
	}
}

// dropLast removes the last assistant message from the in-memory context
// when it ended with stop (the file keeps it).
func (a *Agent) dropLast(stop llm.StopReason) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	for i := len(a.messages) - 1; i >= 0; i-- {
		if m := a.messages[i].LLM; m != nil && m.Role == llm.RoleAssistant {
			if m.StopReason == stop {
				a.messages = slices.Delete(slices.Clone(a.messages), i, i+1)
			}
			return
		}
	}
}
