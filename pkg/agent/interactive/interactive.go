// Package interactive holds the options of the agent's interactive mode.
// The mode itself, pkg/agent/tui, runs on the Charm
// terminal stack and is linked only by omp-host (internal/omphost); the
// command tree builds these options in both binaries, so they live here,
// apart from that stack.
package interactive

import (
	"context"
	"io"

	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/llm"
)

// Options configure the interactive mode (pkg/agent/tui.Run, reached
// through hostapi.Host.RunInteractive). Agent is required; the callbacks
// are how the caller (internal/ompcli) provides what depends on its
// configuration.
type Options struct {
	// Agent drives the session; Run subscribes to its events and moves it
	// to another session file on a session switch (Agent.SetSession).
	// Manual compaction is its CompactNow (its Compactor).
	Agent *agent.Agent
	In    io.Reader
	Out   io.Writer
	// Cwd is the working directory (default paths of /export).
	Cwd string
	// SessionDir is where /new, /fork and /branch create session files
	// ("" = in memory).
	SessionDir string
	// SessionDirs is the /resume scope (the current project's).
	SessionDirs []string
	// Models are the models the picker offers.
	Models []llm.Model
	// SetModel switches the idle ag to the model named by selector
	// (provider/id or a bare id), with its provider and credential
	// (Agent.SetModel, which records the change in the session).
	SetModel func(ctx context.Context, ag *agent.Agent, selector string) error
	// Bash runs a user command (`!cmd`; exclude for `!!cmd`) and returns
	// its result and bashExecution message (nil: `!` is not special).
	Bash func(ctx context.Context, command string, exclude bool) (tools.CommandResult, session.Message, error)
	// OnSwitch is told about every session the UI switches to.
	OnSwitch func(sf *session.File)
	// Prompts are submitted one after the other at start (the positional
	// messages of `omp [messages...]`).
	Prompts []string
	// Version is shown in the banner.
	Version string
	// Getenv reads the environment (VISUAL, EDITOR; default os.Getenv).
	Getenv func(string) string
}
