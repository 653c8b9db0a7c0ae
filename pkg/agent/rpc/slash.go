package rpc

import (
	"strings"
)

// A slash command the server handles itself: a prompt "/<name> [args]"
// ends locally, its response carries data.agentInvoked false and no
// prompt_result follows.
type slashCommand struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Input       map[string]string `json:"input,omitempty"`
	Source      string            `json:"source"`
}

// availableCommands are the slash commands a prompt may start with.
func availableCommands() []slashCommand {
	return []slashCommand{
		{Name: "rename", Description: "Rename the current session", Input: map[string]string{"hint": "<title>"}, Source: "builtin"},
	}
}

// slashCommand runs the slash command text (without its "/"), when it is
// one of availableCommands; its output goes out as command_output frames.
func (s *server) slashCommand(text string) (data any, ok bool) {
	name, args, _ := strings.Cut(text, " ")
	switch name {
	case "rename":
		title := strings.TrimSpace(args)
		if title == "" {
			s.commandOutput("Usage: /rename <title>")
			break
		}
		if err := s.ag.Session.SetTitle(title); err != nil {
			s.commandOutput("Rename failed: " + err.Error())
			break
		}
		s.out.Value(map[string]any{"type": "session_info_update", "title": title, "sessionId": s.ag.SessionID()})
		s.commandOutput("Session renamed to " + title + ".")
	default:
		return nil, false
	}
	return map[string]bool{"agentInvoked": false}, true
}

func (s *server) commandOutput(text string) {
	s.out.Value(map[string]string{"type": "command_output", "text": text})
}
