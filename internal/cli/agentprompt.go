package cli

import (
	"context"
	"fmt"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/prompt"
	"github.com/ompgo/omp/pkg/agent/secrets"
	"github.com/ompgo/omp/pkg/agent/tools"
)

// systemPrompt builds the session's system prompt and
// makes the rulebook readable through rule://<name>. NULL_PROMPT=true
// gives none. Skipped inputs are reported as warnings on stderr.
func (a *app) systemPrompt(ctx context.Context, f *agentFlags, env *config.Env, dirs config.Dirs, cwd string,
	set *tools.Set, tenv *tools.Env, secretsOn bool) (string, error) {
	if prompt.Null(env.Get) {
		return "", nil
	}
	res, err := prompt.Build(ctx, prompt.Options{
		Cwd: cwd, AgentDir: dirs.AgentDir, Home: dirs.Home, Tools: set.Specs(),
		SystemPrompt: f.systemPrompt, AppendPrompt: f.appendSystem,
		NoRules: f.noRules, Secrets: secretsOn, Getenv: env.Get,
	})
	if err != nil {
		return "", err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.stderr, "Warning: %s\n", w)
	}
	tenv.Rule = res.Rules.Lookup
	return res.Text, nil
}

// loadSecrets collects the session's secrets. With
// secrets.enabled the provider is wrapped to obfuscate every request;
// either way the obfuscator restores placeholders in tool arguments and on
// display, so sessions written with obfuscation on keep working with it
// off. Without secrets.enabled no placeholder key is created.
func (a *app) loadSecrets(dirs config.Dirs, cwd string, env *config.Env, settings *config.Settings) (*secrets.Obfuscator, error) {
	if !settings.SecretsEnabled && !secrets.KeyExists(dirs.AgentDir) {
		return nil, nil
	}
	o, warns, err := secrets.Load(dirs.AgentDir, cwd, env.Environ())
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		fmt.Fprintf(a.stderr, "Warning: %s\n", w)
	}
	return o, nil
}
