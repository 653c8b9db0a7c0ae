// Package demo is the offline demo provider (llm.APIDemo): a model that
// answers in process, so the whole path — broker, gateway, every inbound
// wire format, the agent — can be seen working without an account or a
// network. It is reachable only where the vault holds a credential of
// provider llm.ProviderDemo (`omp auth-broker serve --demo`).
//
// Its answers are deterministic:
//   - after a tool result: `demo: the tool <name> returned "<result>"`;
//   - when the request offers tools and the last user message contains
//     "tool": a call of the first tool with arguments {};
//   - otherwise: `demo: you said "<last user message>"`.
//
// The text streams in several deltas (one per word); usage counts about
// four characters per token and costs nothing.
package demo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/llm"
)

// Provider is the demo model's llm.Provider.
type Provider struct {
	// Now is the clock (message timestamps); nil means time.Now.
	Now func() time.Time
}

// Stream answers req without any I/O. The credential is not checked:
// whoever routes here already holds the demo credential.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, model *llm.Model, _ llm.Credential) (*llm.Stream, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	plan := planOf(req)
	input := tokens(requestChars(req))
	ts := now().UnixMilli()
	seq := func(yield func(llm.Event) bool) {
		b := llm.NewBuilder(llm.APIDemo, model.Provider, model.ID, yield)
		msg := b.Message()
		msg.ResponseID = plan.id
		msg.Timestamp = ts
		msg.Usage = llm.Usage{Input: input}
		if !b.Start() {
			return
		}
		if !b.StartText() {
			return
		}
		for _, d := range deltas(plan.text) {
			if ctx.Err() != nil {
				b.Fail(ctx.Err())
				return
			}
			if !b.Text(d) {
				return
			}
		}
		out := len(plan.text)
		if plan.tool != "" {
			if !b.StartToolCall(plan.id+"_call", plan.tool) || !b.ToolArgs("{}") {
				return
			}
			out += len(plan.tool) + 2
		}
		msg.Usage = llm.Usage{Input: input, Output: tokens(out)}.WithCost(model.Cost)
		b.Done(llm.StopEnd)
	}
	return llm.NewStream(seq, nil), nil
}

// plan is the demo's answer to one request.
type plan struct {
	id   string // the response id, derived from the request
	text string
	tool string // the tool to call; "" for none
}

// planOf decides the answer from the last message and the offered tools.
func planOf(req *llm.Request) plan {
	var last *llm.Message
	if n := len(req.Messages); n > 0 {
		last = &req.Messages[n-1]
	}
	var p plan
	switch {
	case last != nil && last.Role == llm.RoleToolResult:
		name := last.ToolName
		if name == "" {
			name = "call"
		}
		p.text = fmt.Sprintf("demo: the tool %s returned %q", name, oneLine(last.TextContent()))
	case last != nil && len(req.Tools) > 0 && strings.Contains(strings.ToLower(last.TextContent()), "tool"):
		p.tool = req.Tools[0].Name
		p.text = "demo: calling the tool " + p.tool
	default:
		said := ""
		if last != nil {
			said = oneLine(last.TextContent())
		}
		p.text = fmt.Sprintf("demo: you said %q", said)
	}
	h := fnv.New64a()
	h.Write([]byte(p.text))
	p.id = fmt.Sprintf("demo_%016x", h.Sum64())
	return p
}

// oneLine trims s and folds its whitespace runs into single spaces, cut to
// 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// deltas splits s into word-sized pieces that concatenate back to s.
func deltas(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// requestChars is the length of the request's text: system, messages and
// tool definitions.
func requestChars(req *llm.Request) int {
	n := 0
	for _, s := range req.System {
		n += len(s.Text)
	}
	for i := range req.Messages {
		for _, c := range req.Messages[i].Content {
			n += len(c.Text) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// tokens estimates the tokens of n characters: four per token, at least one.
func tokens(n int) int64 { return int64(max(1, (n+3)/4)) }
