// Package llmtest holds test helpers for the provider layer: a scripted
// llm.Provider that replays canonical messages as event streams, an event
// grammar checker, and golden-file comparison. Only tests import it.
package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ompgo/omp/pkg/llm"
)

// Replay returns a stream that emits msg as canonical events through an
// llm.Builder: text, thinking and tool-argument text split into chunks of
// at most chunk bytes (≤ 0: whole), signatures attached, redacted and
// native blocks added whole, then done with msg.StopReason, or error when
// it is StopError / StopAborted (with msg.ErrorMessage).
func Replay(msg llm.Message, chunk int) *llm.Stream {
	seq := func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(msg.API, msg.Provider, msg.Model, yield)
		m := b.Message()
		m.ResponseID, m.Usage, m.Stop, m.Timestamp = msg.ResponseID, msg.Usage, msg.Stop, msg.Timestamp
		if !b.Start() {
			return
		}
		for _, c := range msg.Content {
			ok := true
			switch c.Type {
			case llm.ContentText:
				ok = b.StartText() && each(c.Text, chunk, b.Text)
			case llm.ContentThinking:
				ok = b.StartThinking() && each(c.Thinking, chunk, b.Thinking)
				b.AddThinkingSignature(c.ThinkingSignature)
			case llm.ContentToolCall:
				args := c.ArgumentsText
				if args == "" && c.Arguments != nil && string(c.Arguments) != "{}" {
					args = string(c.Arguments)
				}
				ok = b.StartToolCall(c.ID, c.Name) && each(args, chunk, b.ToolArgs)
			default:
				ok = b.AddBlock(c)
			}
			if !ok || !b.EndBlock() {
				return
			}
		}
		switch msg.StopReason {
		case llm.StopError:
			m.ErrorMessage = msg.ErrorMessage
			b.Fail(fmt.Errorf("%s", msg.ErrorMessage))
		case llm.StopAborted:
			b.Fail(context.Canceled)
		default:
			b.Done(msg.StopReason)
		}
	}
	return llm.NewStream(seq, nil)
}

func each(s string, n int, f func(string) bool) bool {
	if s == "" {
		return true
	}
	if n <= 0 {
		n = len(s)
	}
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++ // never split a rune: upstream deltas are valid UTF-8
		}
		if !f(s[:k]) {
			return false
		}
		s = s[k:]
	}
	return true
}

// Provider is a scripted llm.Provider: each call to Stream replays the next
// message of Messages (or fails with Err). It records the requests.
type Provider struct {
	Messages []llm.Message
	// Chunk is the delta size used by Replay.
	Chunk int
	// Err, when set, is returned by Stream (a pre-stream failure).
	Err error

	mu       sync.Mutex
	Requests []*llm.Request
}

var _ llm.Provider = (*Provider)(nil)

// Stream replays the next scripted message.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, cred llm.Credential) (*llm.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Requests = append(p.Requests, req)
	if p.Err != nil {
		return nil, p.Err
	}
	if len(p.Messages) == 0 {
		return nil, fmt.Errorf("llmtest: no scripted message left")
	}
	m := p.Messages[0]
	p.Messages = p.Messages[1:]
	return Replay(m, p.Chunk), nil
}

// CheckGrammar verifies the canonical stream invariants (those llm.Builder
// keeps) over a recorded event sequence and returns the first violation.
func CheckGrammar(events []llm.Event) error {
	if len(events) == 0 || events[0].Type != llm.EventStart {
		return fmt.Errorf("first event is not start")
	}
	open, next := -1, 0
	for i, ev := range events[1:] {
		switch {
		case ev.Type == llm.EventStart:
			return fmt.Errorf("event %d: second start", i+1)
		case ev.Type == llm.EventTextStart || ev.Type == llm.EventThinkingStart || ev.Type == llm.EventToolCallStart:
			if open >= 0 {
				return fmt.Errorf("event %d: block %d started while %d open", i+1, ev.ContentIndex, open)
			}
			if ev.ContentIndex < next {
				return fmt.Errorf("event %d: content index %d reused", i+1, ev.ContentIndex)
			}
			open, next = ev.ContentIndex, ev.ContentIndex+1
		case ev.Type.IsDelta():
			if ev.ContentIndex != open {
				return fmt.Errorf("event %d: delta for %d while %d open", i+1, ev.ContentIndex, open)
			}
		case ev.Type == llm.EventTextEnd || ev.Type == llm.EventThinkingEnd || ev.Type == llm.EventToolCallEnd:
			if ev.ContentIndex != open {
				return fmt.Errorf("event %d: end for %d while %d open", i+1, ev.ContentIndex, open)
			}
			open = -1
		case ev.Type == llm.EventDone:
			if open >= 0 {
				return fmt.Errorf("done with block %d open", open)
			}
			if ev.Partial == nil || ev.Partial.StopReason != ev.Reason {
				return fmt.Errorf("done reason %s differs from message", ev.Reason)
			}
			fallthrough
		case ev.Type == llm.EventError:
			if i+2 != len(events) {
				return fmt.Errorf("event %d: terminal event is not last", i+1)
			}
			return nil
		}
	}
	return fmt.Errorf("no terminal event")
}

// Record drains s, copying each event's Partial at terminal events only
// (earlier Partials alias the producer's state).
func Record(s *llm.Stream) []llm.Event {
	defer s.Close()
	var out []llm.Event
	for ev := range s.Events() {
		out = append(out, ev)
	}
	return out
}

// update is the one -update flag of every provider-layer test binary.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether golden files are being rewritten: the test
// binary ran with -update, or UPDATE_GOLDEN=1 is in the environment.
func Updating() bool { return *update || os.Getenv("UPDATE_GOLDEN") == "1" }

// Golden compares got with testdata/<name> after indenting it when it is
// JSON, so diffs are readable; see [GoldenExact].
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	if json.Valid(got) {
		var b bytes.Buffer
		if err := json.Indent(&b, got, "", "  "); err == nil {
			b.WriteByte('\n')
			got = b.Bytes()
		}
	}
	GoldenExact(t, name, got)
}

// GoldenExact compares got byte for byte with testdata/<name> (name may
// already start with testdata/), or rewrites
// the file when [Updating].
func GoldenExact(t testing.TB, name string, got []byte) {
	t.Helper()
	path := name
	if !strings.HasPrefix(name, "testdata/") {
		path = filepath.Join("testdata", name)
	}
	if Updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
