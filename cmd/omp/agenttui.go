package main

import (
	"context"
	"path/filepath"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/agent/tui"
	"github.com/ompgo/omp/pkg/llm"
)

// interactiveDeps is what the interactive mode needs from runAgent's
// set-up to switch models and sessions.
type interactiveDeps struct {
	cat      *llm.Catalog
	keys     *keyLadder
	env      *config.Env
	settings *config.Settings
	dirs     config.Dirs
	cwd      string
	terminal string
	prompts  []string
}

// runInteractive is `omp` on a terminal without -p: the TUI of
// pkg/agent/tui over ag. It persists the session in use at exit and
// leaves the terminal's breadcrumb on it.
func (a *app) runInteractive(ctx context.Context, ag *agent.Agent, f *agentFlags, d interactiveDeps) error {
	setModel := func(ctx context.Context, ag *agent.Agent, sel string) error {
		m, err := pickModel(ctx, d.cat, sel, "", d.keys)
		if err != nil {
			return err
		}
		cred, err := d.keys.credential(ctx, m)
		if err != nil {
			return err
		}
		prov, err := newProvider(m, config.ProviderURL(d.env, d.settings, m.Provider, "baseUrl"))
		if err != nil {
			return err
		}
		// The UI switches models only between runs, so Credentials (read
		// by the loop per turn) can be replaced here.
		ag.Credentials = nil
		if d.keys.broker != nil && cred.Kind == llm.CredentialOAuth {
			ag.Credentials = func(ctx context.Context) (llm.Credential, error) { return d.keys.credential(ctx, m) }
		}
		return ag.SetModel(m, prov, cred, "")
	}
	var models []llm.Model
	for _, m := range d.cat.Models() {
		if m.Key() == ag.Model.Key() || d.keys.available(ctx, m.Provider) || d.keys.flag != "" && m.Provider == ag.Model.Provider {
			models = append(models, m)
		}
	}
	sdirs := session.Dirs(d.dirs.AgentDir, d.cwd, d.dirs.Home)
	if f.sessionDir != "" {
		sdirs = []string{f.sessionDir}
	}
	newDir := sdirs[0]
	if f.noSession {
		newDir = ""
	}
	blobs := filepath.Join(d.dirs.AgentDir, "blobs")
	sf, err := tui.Run(ctx, tui.Options{
		Agent: ag, In: a.stdin, Out: a.stdout, Cwd: d.cwd,
		SessionDir: newDir, SessionDirs: sdirs, Models: models, SetModel: setModel,
		OnSwitch: func(sf *session.File) {
			d.keys.session = sf.Header().ID
			if sf.Path() != "" {
				sf.SetBlobsDir(blobs)
			}
		},
		Prompts: d.prompts, Version: buildinfo.String(),
	})
	if sf != nil && sf.Path() != "" {
		if perr := sf.Persist(); perr != nil && err == nil {
			err = perr
		}
		session.WriteBreadcrumb(d.dirs.AgentDir, d.terminal, d.cwd, sf.Path())
	}
	return err
}
