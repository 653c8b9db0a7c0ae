package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// Queue and interrupt modes.
const (
	ModeOneAtATime = "one-at-a-time"
	ModeAll        = "all"
	InterruptNow   = "immediate"
	InterruptWait  = "wait"
)

// ErrBusy is returned by Prompt and Start while a run is active; the
// message is the reference's RPC error text.
var ErrBusy = errors.New("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")

// ErrNothingToCompact is the manual-compaction error; CompactNow also
// returns it while no Compactor is set.
var ErrNothingToCompact = errors.New("Nothing to compact")

// skippedText is the result of tool calls skipped by a steering interrupt.
const skippedText = "Skipped due to queued user message."

// CompactFunc compacts the session's context for reason
// "manual", "overflow", "incomplete" or "threshold" and returns the
// CompactionResult JSON ({summary, firstKeptEntryId, tokensBefore, …}).
// It appends the compaction entry to the session and calls
// Agent.ReloadContext. A nil result with a nil error means there was
// nothing to compact. The agent emits auto_compaction_start/end around
// the automatic calls; a manual call emits nothing.
type CompactFunc func(ctx context.Context, reason, customInstructions string) (json.RawMessage, error)

// state is what other goroutines (modes) may read or change while a run
// is active; every field is guarded by mu.
type state struct {
	mu        sync.Mutex
	running   bool
	compactng bool
	cancel    context.CancelFunc
	done      chan struct{}
	// retryCancel cancels a pending retry sleep (abort_retry).
	retryCancel context.CancelFunc
	// toolCancel cancels the running tool on a steering interrupt.
	toolCancel context.CancelFunc
	steerCut   bool

	steering, followUp [][]llm.Content
	steeringMode       string
	followUpMode       string
	interruptMode      string
	noAutoCompaction   bool
	noAutoRetry        bool

	subs   map[int]func(*Event)
	nextID int
	// subList is the emission order snapshot of subs (rebuilt on change).
	subList []func(*Event)
}

// Subscribe adds a listener called synchronously, in emission order, with
// every event after Emit. A listener must not block the loop; the
// Event is only valid during the call. It returns the unsubscribe func.
func (a *Agent) Subscribe(fn func(*Event)) (unsubscribe func()) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if a.st.subs == nil {
		a.st.subs = map[int]func(*Event){}
	}
	id := a.st.nextID
	a.st.nextID++
	a.st.subs[id] = fn
	a.rebuildSubs()
	return func() {
		a.st.mu.Lock()
		defer a.st.mu.Unlock()
		delete(a.st.subs, id)
		a.rebuildSubs()
	}
}

func (a *Agent) rebuildSubs() {
	ids := make([]int, 0, len(a.st.subs))
	for id := range a.st.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	list := make([]func(*Event), 0, len(ids))
	for _, id := range ids {
		list = append(list, a.st.subs[id])
	}
	a.st.subList = list
}

// EmitEvent sends e to Emit and every subscriber (for session-level code
// outside the loop, such as threshold compaction).
func (a *Agent) EmitEvent(e *Event) { a.emit(e) }

// begin marks a run active, or fails with ErrBusy.
func (a *Agent) begin(ctx context.Context) (context.Context, error) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if a.st.running {
		return nil, ErrBusy
	}
	rctx, cancel := context.WithCancel(ctx)
	a.st.running, a.st.cancel, a.st.done = true, cancel, make(chan struct{})
	return rctx, nil
}

func (a *Agent) end() {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.cancel()
	close(a.st.done)
	a.st.running, a.st.cancel, a.st.done = false, nil, nil
}

// Start is PromptContent in a new goroutine: it fails with ErrBusy at once
// when a run is active, otherwise the run is scheduled before Start
// returns and done (optional) receives its result.
func (a *Agent) Start(ctx context.Context, content []llm.Content, done func(*llm.Message, error)) error {
	rctx, err := a.begin(ctx)
	if err != nil {
		return err
	}
	go func() {
		final, err := a.prompt(rctx, content)
		a.end()
		if done != nil {
			done(final, err)
		}
	}()
	return nil
}

// IsStreaming reports whether a run is active.
func (a *Agent) IsStreaming() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.st.running
}

// IsCompacting reports whether a compaction is running.
func (a *Agent) IsCompacting() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.st.compactng
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Abort cancels a pending retry sleep and the active run. The
// returned channel is closed once the run has ended (at once when idle).
func (a *Agent) Abort() <-chan struct{} {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if a.st.retryCancel != nil {
		a.st.retryCancel()
	}
	if !a.st.running {
		return closed
	}
	a.st.cancel()
	return a.st.done
}

// AbortRetry cancels a pending retry sleep only (RPC abort_retry).
func (a *Agent) AbortRetry() {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if a.st.retryCancel != nil {
		a.st.retryCancel()
	}
}

// Steer queues a message delivered at the next steering check: after the
// current tool call in "immediate" interrupt mode (the remaining calls of
// the batch are skipped and the running tool is cancelled), else before
// the next turn. Steering an idle agent only queues; a mode that
// wants idle steering to act as a prompt calls Prompt instead.
func (a *Agent) Steer(content []llm.Content) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.steering = append(a.st.steering, content)
	if a.interruptModeLocked() == InterruptNow && a.st.toolCancel != nil {
		a.st.steerCut = true
		a.st.toolCancel()
	}
}

// FollowUp queues a message delivered when the run would otherwise end.
func (a *Agent) FollowUp(content []llm.Content) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.followUp = append(a.st.followUp, content)
}

// ClearQueues empties the steering and follow-up queues and returns what
// they held (steering first), e.g. to restore it to an editor.
func (a *Agent) ClearQueues() (steering, followUp [][]llm.Content) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	steering, followUp = a.st.steering, a.st.followUp
	a.st.steering, a.st.followUp = nil, nil
	return steering, followUp
}

// QueuedCounts returns the lengths of the steering and follow-up queues.
func (a *Agent) QueuedCounts() (steering, followUp int) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return len(a.st.steering), len(a.st.followUp)
}

func (a *Agent) hasSteering() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return len(a.st.steering) > 0
}

// dequeue takes the next messages of a queue per its mode.
func (a *Agent) dequeue(follow bool) []session.Message {
	a.st.mu.Lock()
	q, mode := &a.st.steering, a.st.steeringMode
	if follow {
		q, mode = &a.st.followUp, a.st.followUpMode
	}
	n := min(1, len(*q))
	if mode == ModeAll {
		n = len(*q)
	}
	taken := slices.Clone((*q)[:n])
	*q = slices.Delete(*q, 0, n)
	a.st.mu.Unlock()
	out := make([]session.Message, 0, len(taken))
	for _, c := range taken {
		out = append(out, session.NewMessage(&llm.Message{Role: llm.RoleUser, Content: c, Timestamp: a.now().UnixMilli()}, nil))
	}
	return out
}

func validQueueMode(m string) bool     { return m == ModeOneAtATime || m == ModeAll }
func validInterruptMode(m string) bool { return m == InterruptNow || m == InterruptWait }

// SetSteeringMode sets "one-at-a-time" (default) or "all".
func (a *Agent) SetSteeringMode(mode string) error {
	return a.setMode(&a.st.steeringMode, mode, validQueueMode(mode), "steering")
}

// SetFollowUpMode sets "one-at-a-time" (default) or "all".
func (a *Agent) SetFollowUpMode(mode string) error {
	return a.setMode(&a.st.followUpMode, mode, validQueueMode(mode), "follow-up")
}

// SetInterruptMode sets "immediate" (default) or "wait".
func (a *Agent) SetInterruptMode(mode string) error {
	return a.setMode(&a.st.interruptMode, mode, validInterruptMode(mode), "interrupt")
}

// setMode stores a valid mode in *field under the state lock; an invalid
// one is the error "Invalid <what> mode: <mode>".
func (a *Agent) setMode(field *string, mode string, valid bool, what string) error {
	if !valid {
		return errors.New("Invalid " + what + " mode: " + mode)
	}
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	*field = mode
	return nil
}

func (a *Agent) interruptModeLocked() string {
	if a.st.interruptMode == "" {
		return InterruptNow
	}
	return a.st.interruptMode
}

// Modes returns the steering, follow-up and interrupt modes.
func (a *Agent) Modes() (steering, followUp, interrupt string) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	or := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	return or(a.st.steeringMode, ModeOneAtATime), or(a.st.followUpMode, ModeOneAtATime), a.interruptModeLocked()
}

// SetAutoCompaction is the runtime override of compaction.enabled.
func (a *Agent) SetAutoCompaction(on bool) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.noAutoCompaction = !on
}

// AutoCompaction reports whether automatic compaction is enabled.
func (a *Agent) AutoCompaction() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return !a.st.noAutoCompaction
}

// SetAutoRetry is the runtime override of retry.enabled.
func (a *Agent) SetAutoRetry(on bool) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.noAutoRetry = !on
}

func (a *Agent) autoRetry() bool {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.Retry.Enabled && !a.st.noAutoRetry
}

// turnConfig is what one turn reads of the settings a mode may change
// while a run is active.
type turnConfig struct {
	model    llm.Model
	provider llm.Provider
	cred     llm.Credential
	level    string
}

func (a *Agent) turnConfig() turnConfig {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return turnConfig{a.Model, a.Provider, a.Credential, a.ThinkingLevel}
}

// CurrentModel returns the active model.
func (a *Agent) CurrentModel() llm.Model {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.Model
}

// CurrentThinkingLevel returns the thinking level.
func (a *Agent) CurrentThinkingLevel() string {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	return a.ThinkingLevel
}

// SetModel switches the model (and its provider and credential) from the
// next turn on and appends a model_change entry (role "" = default).
func (a *Agent) SetModel(m llm.Model, p llm.Provider, cred llm.Credential, role string) error {
	a.st.mu.Lock()
	a.Model, a.Provider, a.Credential = m, p, cred
	a.st.mu.Unlock()
	_, err := a.Session.AppendModelChange(m.Provider, m.ID, role)
	return err
}

// RestoreModel adopts a session's own model (after a session switch)
// without writing an entry.
func (a *Agent) RestoreModel(m llm.Model, p llm.Provider, cred llm.Credential) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.Model, a.Provider, a.Credential = m, p, cred
}

// RestoreThinkingLevel adopts a session's own level without an entry.
func (a *Agent) RestoreThinkingLevel(level string) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.ThinkingLevel = level
}

// SetThinkingLevel sets the level from the next turn on and appends a
// thinking_level_change entry.
func (a *Agent) SetThinkingLevel(level string) error {
	a.st.mu.Lock()
	a.ThinkingLevel = level
	a.st.mu.Unlock()
	_, err := a.Session.AppendThinkingLevel(level)
	return err
}

// SessionID returns the session id.
func (a *Agent) SessionID() string { return a.Session.Header().ID }

// SessionFile returns the session file path ("" in memory).
func (a *Agent) SessionFile() string { return a.Session.Path() }

// MessageCount returns the number of in-memory context messages.
func (a *Agent) MessageCount() int {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.load()
	return len(a.messages)
}

// ReloadContext rebuilds the in-memory context from the session (after a
// compaction, a branch or a session switch). Call it while no run is
// active, or from the Compactor.
func (a *Agent) ReloadContext() {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.messages = a.Session.BuildContext().Messages
	a.loaded = true
}

// SetSession switches to another session file: the active run is aborted
// (and waited for), the queues are cleared and the context is rebuilt.
func (a *Agent) SetSession(sf *session.File) {
	<-a.Abort()
	a.ClearQueues()
	a.st.mu.Lock()
	a.Session = sf
	a.messages, a.loaded = nil, false
	a.st.mu.Unlock()
}

// CompactNow runs the Compactor for a manual compaction (RPC compact,
// /compact): the active run is aborted first.
func (a *Agent) CompactNow(ctx context.Context, customInstructions string) (json.RawMessage, error) {
	<-a.Abort()
	if a.Compactor == nil {
		return nil, ErrNothingToCompact
	}
	a.setCompacting(true)
	defer a.setCompacting(false)
	res, err := a.Compactor(ctx, "manual", customInstructions)
	if err == nil && res == nil {
		err = ErrNothingToCompact
	}
	return res, err
}

func (a *Agent) setCompacting(on bool) {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	a.st.compactng = on
}

// AppendMessage appends a finished message (e.g. a user bashExecution) to
// the session and the in-memory context without starting a run; it
// reaches the model with the next prompt.
func (a *Agent) AppendMessage(m session.Message) error {
	a.st.mu.Lock()
	a.load()
	a.st.mu.Unlock()
	return a.persist(m)
}
