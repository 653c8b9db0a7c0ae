package tui

import (
	"encoding/json"
	"strings"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// transcript is the agent's context as the scrollback shows it live: the
// user's messages, the assistant's answers, every tool call with its
// result, user commands, and a divider for a compaction or a branch
// summary ("" for an empty context). Model text is shown in its display
// form (secret placeholders restored).
func (m *model) transcript() string {
	restore := func(s string) string { return s }
	if m.ag.Secrets != nil {
		restore = m.ag.Secrets.Restore
	}
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	summaries := map[string]string{}
	for _, msg := range m.ag.Messages() {
		switch msg.Role {
		case session.RoleCompactionSummary:
			var c struct {
				Summary      string `json:"summary"`
				TokensBefore int    `json:"tokensBefore"`
			}
			_ = json.Unmarshal(msg.Raw, &c)
			m.lastSummary = c.Summary
			add(compactedLine(c.TokensBefore))
			continue
		case session.RoleBranchSummary:
			var b struct {
				Summary string `json:"summary"`
			}
			_ = json.Unmarshal(msg.Raw, &b)
			add("\n" + styleNotice.Render("── branch summary ──") + "\n" + styleDim.Render(m.wrap(strings.TrimSpace(restore(b.Summary)))))
			continue
		case session.RoleBashExecution:
			var b struct {
				Command   string `json:"command"`
				Output    string `json:"output"`
				ExitCode  *int   `json:"exitCode"`
				Cancelled bool   `json:"cancelled"`
				Exclude   bool   `json:"excludeFromContext"`
			}
			_ = json.Unmarshal(msg.Raw, &b)
			m.lastTool = b.Output
			add(m.bashLines(b.Command, b.Exclude, tools.CommandResult{Output: b.Output, ExitCode: b.ExitCode, Cancelled: b.Cancelled}))
			continue
		case session.RoleCustom, session.RoleHookMessage:
			var c struct {
				Display bool `json:"display"`
			}
			_ = json.Unmarshal(msg.Raw, &c)
			if c.Display && msg.LLM != nil {
				if t := strings.TrimSpace(contentText(msg.LLM.Content)); t != "" {
					add("\n" + styleDim.Render(m.wrap(restore(t))))
				}
			}
			continue
		}
		l := msg.LLM
		if l == nil {
			continue
		}
		switch l.Role {
		case llm.RoleUser:
			if t := contentText(l.Content); strings.TrimSpace(t) != "" {
				add(userLine(restore(t)))
			}
		case llm.RoleAssistant:
			bs := blocks(l)
			for i := range bs {
				bs[i].text = restore(bs[i].text)
			}
			for _, c := range l.Content {
				if c.Type == llm.ContentToolCall {
					summaries[c.ID] = restore(argSummary(c.Name, c.Arguments))
				}
			}
			add(m.assistantText(assistantMsg{blocks: bs, stop: l.StopReason, errMsg: l.ErrorMessage}))
		case llm.RoleToolResult:
			var parts []string
			for _, c := range l.Content {
				switch c.Type {
				case llm.ContentText:
					parts = append(parts, c.Text)
				case llm.ContentImage:
					parts = append(parts, "[image]")
				}
			}
			output := restore(strings.Join(parts, "\n"))
			m.lastTool = output
			add(m.toolLines(toolEndMsg{id: l.ToolCallID, name: l.ToolName, output: output, isError: l.IsError}, summaries[l.ToolCallID]))
		}
	}
	return strings.Join(out, "\n")
}
