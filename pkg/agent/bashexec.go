package agent

import (
	"encoding/json"
	"time"

	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
)

// BashExecution is the bashExecution session message of a user command
// (`!cmd`, `!!cmd` with exclude, RPC bash).
func BashExecution(command string, res tools.CommandResult, exclude bool, now time.Time) (session.Message, error) {
	msg := map[string]any{"role": session.RoleBashExecution, "command": command, "output": res.Output,
		"cancelled": res.Cancelled, "truncated": res.Truncated, "timestamp": now.UnixMilli()}
	if res.ExitCode != nil {
		msg["exitCode"] = *res.ExitCode
	}
	if res.ArtifactID != "" {
		msg["artifactId"] = res.ArtifactID
	}
	if exclude {
		msg["excludeFromContext"] = true
	}
	raw, _ := json.Marshal(msg)
	return session.DecodeMessage(raw)
}
