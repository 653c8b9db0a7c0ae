package cli

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tools"
	"github.com/ompgo/omp/pkg/agent/tui"
	"github.com/ompgo/omp/pkg/llm"
)

// runInteractive is `omp` on a terminal without -p: the TUI of
// pkg/agent/tui over the runtime's agent. It persists the session in use
// at exit and leaves the terminal's breadcrumb on it.
func (a *app) runInteractive(ctx context.Context, rt *agentRuntime, f *agentFlags, prompts []string) error {
	ag := rt.ag
	setModel := func(ctx context.Context, _ *agent.Agent, sel string) error {
		m, err := pickModel(ctx, rt.cat, sel, "", rt.keys)
		if err != nil {
			return err
		}
		return rt.switchModel(ctx, m, "")
	}
	var models []llm.Model
	for _, m := range rt.cat.Models() {
		if m.ModelKind() != llm.KindChat {
			continue
		}
		if m.Key() == ag.Model.Key() || rt.keys.available(ctx, m.Provider) || rt.keys.flag != "" && m.Provider == ag.Model.Provider {
			models = append(models, m)
		}
	}
	sdirs := session.Dirs(rt.dirs.AgentDir, rt.cwd, rt.dirs.Home)
	if f.sessionDir != "" {
		sdirs = []string{f.sessionDir}
	}
	newDir := sdirs[0]
	if f.noSession {
		newDir = ""
	}
	blobs := filepath.Join(rt.dirs.AgentDir, "blobs")
	sf, err := tui.Run(ctx, tui.Options{
		Agent: ag, In: a.stdin, Out: a.stdout, Cwd: rt.cwd,
		SessionDir: newDir, SessionDirs: sdirs, Models: models, SetModel: setModel,
		Bash: func(ctx context.Context, command string, exclude bool) (tools.CommandResult, session.Message, error) {
			res, err := tools.RunCommand(ctx, rt.tenv, rt.bashOpt, command)
			if err != nil {
				return res, session.Message{}, err
			}
			m, err := agent.BashExecution(command, res, exclude, a.now())
			return res, m, err
		},
		OnSwitch: func(sf *session.File) {
			rt.keys.session = sf.Header().ID
			if sf.Path() != "" {
				sf.SetBlobsDir(blobs)
			}
		},
		Prompts: prompts, Version: buildinfo.String(), Getenv: rt.env.Get,
	})
	if sf != nil && sf.Path() != "" {
		if perr := sf.Persist(); perr != nil && err == nil {
			err = perr
		}
		session.WriteBreadcrumb(rt.dirs.AgentDir, rt.terminal, rt.cwd, sf.Path())
	}
	return err
}

// switchModel makes m the agent's model with its provider and credential
// (RPC set_model/cycle_model, the interactive picker): a model_change with
// role, and the thinking level clamped to what m supports.
func (rt *agentRuntime) switchModel(ctx context.Context, m llm.Model, role string) error {
	if rt.keys.flag == "" && !rt.keys.available(ctx, m.Provider) {
		return errors.New("No credentials for provider: " + m.Provider)
	}
	cred, err := rt.keys.credential(ctx, m)
	if err != nil {
		return errors.New("No credentials for provider: " + m.Provider)
	}
	prov, err := rt.provider(m)
	if err != nil {
		return err
	}
	if err := rt.ag.SetModel(m, prov, cred, role); err != nil {
		return err
	}
	if lvl := rt.ag.CurrentThinkingLevel(); agent.ClampThinkingLevel(m, lvl) != lvl {
		return rt.ag.SetThinkingLevel(agent.ClampThinkingLevel(m, lvl))
	}
	return nil
}
