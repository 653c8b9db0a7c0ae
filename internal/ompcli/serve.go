package ompcli

import (
	"github.com/spf13/cobra"

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
			h, err := a.host()
			if err != nil {
				return err
			}
			return h.ServeBroker(cmd.Context(), env, dirs, a.logger(), f.bind, f.vaultKeyFile)
		},
	}
	cmd.Flags().StringVarP(&f.bind, "bind", "b", config.DefaultBrokerBind, "listen address, host:port or port")
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file (default <config-dir>/vault.key; OMP_VAULT_KEY wins over the default)")
	return cmd
}
