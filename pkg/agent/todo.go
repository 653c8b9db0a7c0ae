package agent

import (
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
)

// RestoreTodos rebuilds the todo list of a resumed session: from
// whichever comes later on the active path, the latest successful todo
// tool result's details.phases or the latest user_todo_edit custom entry;
// completed and abandoned tasks are dropped.
func RestoreTodos(sf *session.File) []tools.TodoPhase {
	path := sf.ActivePath()
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		var phases []tools.TodoPhase
		switch e.Type {
		case session.TypeMessage:
			var v struct {
				Message struct {
					Role     string `json:"role"`
					ToolName string `json:"toolName"`
					IsError  bool   `json:"isError"`
					Details  struct {
						Phases []tools.TodoPhase `json:"phases"`
					} `json:"details"`
				} `json:"message"`
			}
			if e.Decode(&v) != nil || v.Message.Role != "toolResult" || v.Message.ToolName != "todo" || v.Message.IsError {
				continue
			}
			phases = v.Message.Details.Phases
		case session.TypeCustom:
			var v struct {
				CustomType string `json:"customType"`
				Data       struct {
					Phases []tools.TodoPhase `json:"phases"`
				} `json:"data"`
			}
			if e.Decode(&v) != nil || v.CustomType != "user_todo_edit" {
				continue
			}
			phases = v.Data.Phases
		default:
			continue
		}
		var out []tools.TodoPhase
		for _, p := range phases {
			kept := tools.TodoPhase{Name: p.Name}
			for _, t := range p.Tasks {
				if t.Status != tools.TodoCompleted && t.Status != tools.TodoAbandoned {
					kept.Tasks = append(kept.Tasks, t)
				}
			}
			out = append(out, kept)
		}
		return out
	}
	return nil
}
