package cli

import (
	"context"

	"github.com/ompgo/omp/pkg/agent/rpc"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/llm"
)

// runRPC is `omp --mode rpc`: the server of pkg/agent/rpc over the
// process's stdin and stdout, with the runtime's model switching and
// credential ladder.
func (a *app) runRPC(ctx context.Context, rt *agentRuntime) error {
	return rpc.Serve(ctx, &rpc.Host{
		Agent: rt.ag, Catalog: rt.cat,
		Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Now: a.now,
		Cwd: rt.cwd, AgentDir: rt.dirs.AgentDir, Terminal: rt.terminal,
		ToolEnv: rt.tenv, BashOptions: rt.bashOpt,
		FixedKey:    rt.keys.flag != "",
		Available:   rt.keys.available,
		SwitchModel: rt.switchModel,
		RestoreModel: func(ctx context.Context, m llm.Model) error {
			cred, err := rt.keys.credential(ctx, m)
			if err != nil {
				return err
			}
			prov, err := rt.provider(m)
			if err != nil {
				return err
			}
			rt.ag.RestoreModel(m, prov, cred)
			return nil
		},
		SessionChanged: func(sf *session.File) { rt.keys.session = sf.Header().ID },
	})
}
