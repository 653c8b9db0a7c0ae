package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/logx"
)

func newServeCmd(a *app, f *brokerFlags) *cobra.Command {
	var logs logFlags
	var demo bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker (vault, refresher, HTTP API)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, dirs, err := a.setup()
			if err != nil {
				return err
			}
			o, err := logs.options(env)
			if err != nil {
				return err
			}
			cfg, err := broker.FromEnv(env, dirs, slog.New(o.Handler(a.stderr)))
			if err != nil {
				return err
			}
			cfg.Bind = f.bind
			cfg.Demo = demo
			if f.vaultKeyFile != "" {
				cfg.KeyPath, cfg.VaultKey = f.vaultKeyFile, ""
			}
			return broker.Serve(cmd.Context(), cfg)
		},
	}
	cmd.Flags().StringVarP(&f.bind, "bind", "b", config.DefaultBrokerBind, "listen address, host:port or port")
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file (default <config-dir>/vault.key; OMP_VAULT_KEY wins over the default)")
	cmd.Flags().BoolVar(&demo, "demo", false, "also serve the offline demo provider (model demo/demo-echo, no account needed); without it a stored demo credential is disabled")
	logs.add(cmd)
	return cmd
}

// logFlags are the --log-level and --log-format flags of a serve command.
type logFlags struct{ level, format string }

func (f *logFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.level, "log-level", "", logx.LevelUsage)
	fl.StringVar(&f.format, "log-format", "", logx.FormatUsage)
}

// options parses the flags; a flag not given falls back to env's
// OMP_LOG_LEVEL or OMP_LOG_FORMAT.
func (f *logFlags) options(env *config.Env) (logx.Options, error) {
	return logx.Parse(f.level, f.format, env.Get)
}
