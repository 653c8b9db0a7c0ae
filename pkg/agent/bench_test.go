package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/tools/benchcpu"
)

// replayed is a provider whose turns are pre-built event slices, so the
// benchmark measures the loop and not a stream producer.
type replayed struct {
	turns [][]llm.Event
	n     int
}

func (p *replayed) Stream(context.Context, *llm.Request, *llm.Model, llm.Credential) (*llm.Stream, error) {
	evs := p.turns[p.n%len(p.turns)]
	p.n++
	return llm.NewStream(func(yield func(llm.Event) bool) {
		for _, e := range evs {
			if !yield(e) {
				return
			}
		}
	}, nil), nil
}

func record(m llm.Message) []llm.Event {
	var out []llm.Event
	b := llm.NewBuilder(m.API, m.Provider, m.Model, func(e llm.Event) bool {
		cp := e
		if e.Partial != nil {
			pm := *e.Partial
			pm.Content = append([]llm.Content(nil), e.Partial.Content...)
			cp.Partial = &pm
		}
		out = append(out, cp)
		return true
	})
	b.Start()
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			b.StartText()
			b.Text(c.Text)
		case llm.ContentToolCall:
			b.StartToolCall(c.ID, c.Name)
			b.ToolArgs(string(c.Arguments))
		}
		b.EndBlock()
	}
	b.Done(m.StopReason)
	return out
}

// BenchmarkTurnOverhead is the agent's own cost of one tool-loop turn (a
// prompt that makes one no-op tool call, then answers): request building,
// event handling, persistence to an in-memory session, tool dispatch and
// validation; the model and the tool itself cost nothing here (target:
// ≤ 1 ms per turn). ns/op covers two turns.
func BenchmarkTurnOverhead(b *testing.B) {
	noop := &tools.Tool{Name: "noop", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`),
		Run: func(context.Context, map[string]any, func(tools.Result)) (tools.Result, error) {
			return tools.TextResult("ok", nil), nil
		}}
	prov := &replayed{turns: [][]llm.Event{
		record(llm.Message{API: llm.APIAnthropic, StopReason: llm.StopToolUse, Content: []llm.Content{
			llm.Text("calling"), llm.ToolCall("t1", "noop", json.RawMessage(`{"x":"y"}`))}}),
		record(llm.Message{API: llm.APIAnthropic, StopReason: llm.StopEnd, Content: []llm.Content{llm.Text("done")}}),
	}}
	sf, _ := session.Create("", "/x", session.Options{})
	a := &Agent{Session: sf, Provider: prov, Model: testModel, Tools: tools.NewSet(noop)}
	ctx := context.Background()
	stop := benchcpu.Start(b)
	defer stop()
	for b.Loop() {
		if m, err := a.Prompt(ctx, "go"); err != nil || m.StopReason != llm.StopEnd {
			b.Fatal(err, m)
		}
		// Keep the context from growing across iterations.
		a.setMessages(a.messages[:0])
	}
}
