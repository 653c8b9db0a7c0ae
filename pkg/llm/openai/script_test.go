package openai

import (
	"errors"

	"github.com/ompgo/omp/pkg/llm"
)

// script is a canonical assistant turn used by the encoder tests.
type script struct {
	thinking, thinkingSig string
	text                  []string // text deltas
	calls                 []scriptCall
	reason                llm.StopReason
	usage                 llm.Usage
	fail                  error // ends with an error instead of done
	safety                bool
}

type scriptCall struct {
	id, name string
	args     []string // argument fragments
}

// agentScript has thinking, text and two parallel tool calls, one
// without arguments.
var agentScript = script{
	thinking: "Plan the calls.", thinkingSig: "sig-anthropic-123",
	text: []string{"Checking ", "the \"weather\"\n"},
	calls: []scriptCall{
		{id: "call_paris", name: "get_weather", args: []string{`{"city":`, `"Paris"}`}},
		{id: "call_time", name: "get_time"},
	},
	reason: llm.StopEnd,
	usage:  llm.Usage{Input: 20, CacheRead: 100, Output: 40, Reasoning: 12},
}

// play feeds the script through a Builder, calling each encoder callback
// while the event is live. It returns the final message.
func (s script) play(api string, yield func(ev *llm.Event)) *llm.Message {
	var final *llm.Message
	b := llm.NewBuilder(api, "test", "m", func(ev llm.Event) bool {
		yield(&ev)
		if ev.Type.IsTerminal() {
			m := *ev.Partial
			final = &m
		}
		return true
	})
	b.Message().ResponseID = "upstream-1"
	b.Start()
	if s.thinking != "" {
		b.Thinking(s.thinking)
		b.AddThinkingSignature(s.thinkingSig)
	}
	for _, t := range s.text {
		b.Text(t)
	}
	for _, c := range s.calls {
		b.StartToolCall(c.id, c.name)
		for _, a := range c.args {
			b.ToolArgs(a)
		}
	}
	b.Message().Usage = s.usage
	switch {
	case s.safety:
		m := b.Message()
		m.Stop = llm.StopDetail{Raw: "refusal", API: llm.APIAnthropic, Safety: true}
		b.Done(llm.StopError)
	case s.fail != nil:
		b.Fail(s.fail)
	default:
		b.Done(s.reason)
	}
	return final
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }
