package llm

import (
	"context"
	"errors"
	"strings"
)

// Builder assembles a canonical event stream that obeys the stream
// invariants (one start, dense content indices, at most one open
// block, every block ended before done, exactly one terminal event, toolUse
// when a tool was called). Upstream adapters feed it what they parse and it
// calls yield for each event; every method returns false once the consumer
// has stopped or the stream has ended, and the adapter should then return.
//
// A Builder does not allocate per event: block text grows in a
// strings.Builder whose String the partial message's strings are.
type Builder struct {
	msg     Message
	yield   func(Event) bool
	open    int // index of the open block, -1 when none
	buf     strings.Builder
	started bool
	done    bool // terminal event emitted or consumer stopped
}

// NewBuilder returns a Builder for one assistant turn. api, provider and
// model label the message.
func NewBuilder(api, provider, model string, yield func(Event) bool) *Builder {
	return &Builder{
		msg:   Message{Role: RoleAssistant, API: api, Provider: provider, Model: model},
		yield: yield,
		open:  -1,
	}
}

// Message returns the message being built. Adapters may set metadata
// (ResponseID, Usage, Stop, Timestamp) on it directly.
func (b *Builder) Message() *Message { return &b.msg }

// Open returns the open block, or nil.
func (b *Builder) Open() *Content {
	if b.open < 0 {
		return nil
	}
	return &b.msg.Content[b.open]
}

// Ended reports whether the terminal event was emitted or the consumer
// stopped.
func (b *Builder) Ended() bool { return b.done }

// Started reports whether the start event was emitted.
func (b *Builder) Started() bool { return b.started }

func (b *Builder) emit(ev Event) bool {
	if b.done {
		return false
	}
	ev.Partial = &b.msg
	if !b.yield(ev) {
		b.done = true
		return false
	}
	return true
}

// Start emits the start event (once; later calls are no-ops).
func (b *Builder) Start() bool {
	if b.started {
		return !b.done
	}
	b.started = true
	return b.emit(Event{Type: EventStart})
}

func (b *Builder) begin(c Content, t EventType) bool {
	if !b.Start() || !b.EndBlock() {
		return false
	}
	b.msg.Content = append(b.msg.Content, c)
	b.open = len(b.msg.Content) - 1
	b.buf.Reset() // earlier blocks keep the strings they have
	return b.emit(Event{Type: t, ContentIndex: b.open})
}

// StartText ends any open block and starts a text block.
func (b *Builder) StartText() bool { return b.begin(Content{Type: ContentText}, EventTextStart) }

// StartThinking ends any open block and starts a thinking block.
func (b *Builder) StartThinking() bool {
	return b.begin(Content{Type: ContentThinking}, EventThinkingStart)
}

// StartToolCall ends any open block and starts a tool call with the id and
// name known so far.
func (b *Builder) StartToolCall(id, name string) bool {
	return b.begin(Content{Type: ContentToolCall, ID: id, Name: name}, EventToolCallStart)
}

// StartBlock ends any open block and starts block c, a text, thinking or
// tool-call block whose metadata (ItemID, ID, Name, CustomWireName, …) is
// known up front, so the start event already carries it. Any text in c is
// ignored: stream it with Text, Thinking or ToolArgs. Other block types
// return false and emit nothing.
func (b *Builder) StartBlock(c Content) bool {
	var t EventType
	switch c.Type {
	case ContentText:
		t = EventTextStart
	case ContentThinking:
		t = EventThinkingStart
	case ContentToolCall:
		t = EventToolCallStart
	default:
		return false
	}
	c.Text, c.Thinking, c.ArgumentsText, c.Arguments = "", "", "", nil
	return b.begin(c, t)
}

// grow appends delta to the open block's text and returns the whole text.
func (b *Builder) grow(delta string) string {
	b.buf.WriteString(delta)
	return b.buf.String()
}

// tail returns the end of full that grow just appended delta to: the
// event's Delta shares the block text, never the caller's (often reused)
// parse buffer, so consumers may keep it.
func tail(full, delta string) string { return full[len(full)-len(delta):] }

// Text appends a text delta, starting a text block unless one is open.
func (b *Builder) Text(delta string) bool {
	if c := b.Open(); c == nil || c.Type != ContentText {
		if !b.StartText() {
			return false
		}
	}
	if delta == "" {
		return !b.done
	}
	full := b.grow(delta)
	b.msg.Content[b.open].Text = full
	return b.emit(Event{Type: EventTextDelta, ContentIndex: b.open, Delta: tail(full, delta)})
}

// Thinking appends a thinking delta, starting a thinking block unless one
// is open.
func (b *Builder) Thinking(delta string) bool {
	if c := b.Open(); c == nil || c.Type != ContentThinking {
		if !b.StartThinking() {
			return false
		}
	}
	if delta == "" {
		return !b.done
	}
	full := b.grow(delta)
	b.msg.Content[b.open].Thinking = full
	return b.emit(Event{Type: EventThinkingDelta, ContentIndex: b.open, Delta: tail(full, delta)})
}

// ToolArgs appends a raw argument-JSON fragment to the open tool call. It
// returns false, emitting nothing, when no tool call is open.
func (b *Builder) ToolArgs(delta string) bool {
	c := b.Open()
	if c == nil || c.Type != ContentToolCall {
		return false
	}
	if delta == "" {
		return !b.done
	}
	full := b.grow(delta)
	c.ArgumentsText = full
	return b.emit(Event{Type: EventToolCallDelta, ContentIndex: b.open, Delta: tail(full, delta)})
}

// AddThinkingSignature appends sig to the signature of the open thinking
// block, or of the last thinking block when none is open. It emits nothing
// (invariant 6).
func (b *Builder) AddThinkingSignature(sig string) {
	for i := len(b.msg.Content) - 1; i >= 0; i-- {
		if b.msg.Content[i].Type == ContentThinking {
			b.msg.Content[i].ThinkingSignature += sig
			return
		}
	}
}

// EndBlock ends the open block, if any: text_end / thinking_end with the
// full text, or toolcall_end with the final arguments.
func (b *Builder) EndBlock() bool {
	if b.open < 0 {
		return !b.done
	}
	i := b.open
	b.open = -1
	c := &b.msg.Content[i]
	switch c.Type {
	case ContentText:
		return b.emit(Event{Type: EventTextEnd, ContentIndex: i, Content: c.Text})
	case ContentThinking:
		return b.emit(Event{Type: EventThinkingEnd, ContentIndex: i, Content: c.Thinking})
	case ContentToolCall:
		c.Arguments = FinalizeArguments(c.ArgumentsText)
		return b.emit(Event{Type: EventToolCallEnd, ContentIndex: i})
	}
	return !b.done
}

// AddBlock appends a complete block that has no event of its own (a
// redacted-thinking or native block). It ends the open block first.
func (b *Builder) AddBlock(c Content) bool {
	if !b.Start() || !b.EndBlock() {
		return false
	}
	b.msg.Content = append(b.msg.Content, c)
	return true
}

// Done ends the turn normally: it ends the open block and emits done with
// reason (StopEnd becomes StopToolUse when a tool was called). A reason
// that is not a success reason is treated as Fail.
func (b *Builder) Done(reason StopReason) bool {
	if !reason.IsTerminalSuccess() {
		msg := b.msg.ErrorMessage
		if msg == "" {
			msg = "upstream stopped with " + string(reason)
			if b.msg.Stop.Raw != "" {
				msg = "upstream stopped with " + b.msg.Stop.Raw
			}
		}
		return b.Fail(errors.New(msg))
	}
	if !b.Start() || !b.EndBlock() {
		return false
	}
	if reason == StopEnd && b.msg.HasToolCall() {
		reason = StopToolUse
	}
	b.msg.StopReason = reason
	ok := b.emit(Event{Type: EventDone, Reason: reason})
	b.done = true
	return ok
}

// Fail ends the turn with an error event. The reason is StopAborted when
// err is (or wraps) context.Canceled, else StopError. Open blocks are left
// open (invariant 4). The message's ErrorMessage is err's text and its
// ErrorStatus the upstream status when err is an *UpstreamError.
func (b *Builder) Fail(err error) bool {
	if b.done {
		return false
	}
	if !b.Start() {
		return false
	}
	reason := StopError
	if errors.Is(err, context.Canceled) {
		reason = StopAborted
	}
	b.msg.StopReason = reason
	b.msg.ErrorMessage = errorText(err)
	var ue *UpstreamError
	if errors.As(err, &ue) {
		b.msg.ErrorStatus = ue.Status
	}
	ok := b.emit(Event{Type: EventError, Reason: reason, Err: err})
	b.done = true
	return ok
}
