package ompcli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

func newRekeyCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Add a new vault key and re-seal every secret under it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runRekey(cmd.Context(), f.vaultKeyFile, f.json)
		},
	}
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file to rotate (default <config-dir>/vault.key)")
	return cmd
}

// runRekey rotates the vault key online (Host.Rekey): a new key is added
// to the key file and made the vault's active key, every secret is re-sealed
// under it while a running broker keeps serving (it re-reads the key file
// when it meets the new key), and only then are the old keys retired.
func (a *app) runRekey(ctx context.Context, keyPath string, asJSON bool) error {
	h, err := a.host()
	if err != nil {
		return err
	}
	env, dirs, err := a.setup()
	if err != nil {
		return err
	}
	if keyPath == "" {
		if env.Get("OMP_VAULT_KEY") != "" {
			return errors.New("rekey rotates a key file, but OMP_VAULT_KEY is set: write the key-file text to a 0600 file and pass it with --vault-key-file, then put the rotated file back into your secret manager")
		}
		keyPath = dirs.VaultKeyPath()
	}
	path, err := a.adoptVault(ctx, dirs)
	if err != nil {
		return err
	}
	return h.Rekey(ctx, a.stdout, path, keyPath, asJSON)
}
