package anthropic

import "github.com/ompgo/omp/pkg/llm"

// The tool-related members of a Messages request: tools, tool_choice and
// thinking, and tool-result naming.

func (d *decoder) tools(req *llm.Request) {
	r := d.r
	if r.Null() || !r.BeginArray() {
		return
	}
	for r.More() {
		mark := r.Mark()
		var t llm.Tool
		typ := ""
		if !r.BeginObject() {
			return
		}
		for r.More() {
			switch string(r.Key()) {
			case "type":
				typ = r.String()
			case "name":
				t.Name = r.String()
			case "description":
				t.Description = r.String()
			case "input_schema":
				t.Parameters = r.Raw()
			case "strict":
				if !r.Null() {
					v := r.Bool()
					t.Strict = &v
				}
			case "cache_control":
				t.Cache = d.cache()
			default:
				r.Skip()
			}
		}
		if typ != "" && typ != "custom" {
			req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Native: r.Since(mark), NativeAPI: llm.APIAnthropic})
			continue
		}
		if t.Name == "" && r.Err() == nil {
			d.fail("tools[].name is required")
			return
		}
		req.Tools = append(req.Tools, t)
	}
}

func (d *decoder) toolChoice(req *llm.Request) {
	r := d.r
	if r.Null() || !r.BeginObject() {
		return
	}
	typ, name, noParallel := "", "", false
	for r.More() {
		switch string(r.Key()) {
		case "type":
			typ = r.String()
		case "name":
			name = r.String()
		case "disable_parallel_tool_use":
			noParallel = r.Bool()
		default:
			r.Skip()
		}
	}
	switch typ {
	case "auto":
		req.ToolChoice.Mode = llm.ToolChoiceAuto
	case "any":
		req.ToolChoice.Mode = llm.ToolChoiceRequired
	case "none":
		req.ToolChoice.Mode = llm.ToolChoiceNone
	case "tool":
		if name == "" {
			d.fail("tool_choice.name is required for type tool")
			return
		}
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: name}
	default:
		d.fail("unknown tool_choice.type %q", typ)
		return
	}
	if noParallel {
		f := false
		req.ParallelToolCalls = &f
	}
}

func (d *decoder) thinking(req *llm.Request) {
	r := d.r
	if r.Null() || !r.BeginObject() {
		return
	}
	typ, budget := "", 0
	for r.More() {
		switch string(r.Key()) {
		case "type":
			typ = r.String()
		case "budget_tokens":
			budget = int(r.Int())
		default:
			r.Skip()
		}
	}
	switch typ {
	case "enabled":
		req.ThinkingBudget = budget
		if req.Reasoning == llm.EffortNone {
			req.Reasoning = llm.EffortForBudget(budget)
		}
	case "disabled":
		req.DisableReasoning = true
	case "adaptive":
		req.AdaptiveThinking = true
		req.ThinkingBudget = budget
		if req.Reasoning == llm.EffortNone {
			req.Reasoning = llm.EffortMedium
		}
	default:
		d.fail("unknown thinking.type %q", typ)
	}
}

// toolName finds the name of the tool call id among earlier assistant
// messages (most recent first).
func toolName(msgs []llm.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].Content {
			if c.Type == llm.ContentToolCall && c.ID == id {
				return c.Name
			}
		}
		if i < len(msgs)-8 {
			break // results answer recent calls; bound the search
		}
	}
	return ""
}
