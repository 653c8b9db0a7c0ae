package ompcli

import (
	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/brokerd"
	"github.com/ompgo/omp/internal/config"
)

func newServeCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the broker (vault, refresher, HTTP API)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, dirs, err := a.setup()
			if err != nil {
				return err
			}
			cfg := brokerd.FromEnv(env, dirs, a.logger())
			cfg.Bind = f.bind
			if f.vaultKeyFile != "" {
				cfg.KeyPath, cfg.VaultKey = f.vaultKeyFile, ""
			}
			return brokerd.Serve(cmd.Context(), cfg)
		},
	}
	cmd.Flags().StringVarP(&f.bind, "bind", "b", config.DefaultBrokerBind, "listen address, host:port or port")
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file (default <config-dir>/vault.key; OMP_VAULT_KEY wins over the default)")
	return cmd
}
