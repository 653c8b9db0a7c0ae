package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault/sqlite"
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

// runRekey rotates the vault key online (sqlite.Rekey): a new key is added
// to the key file and made the vault's active key, every secret is re-sealed
// under it while a running broker keeps serving (it re-reads the key file
// when it meets the new key), and only then are the old keys retired.
func (a *app) runRekey(ctx context.Context, keyPath string, asJSON bool) error {
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
	res, err := sqlite.Rekey(ctx, path, keyPath, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("rekey vault %s with key file %s: %w", path, keyPath, err)
	}
	retired := make([]string, len(res.RetiredIDs))
	for i, id := range res.RetiredIDs {
		retired[i] = fmt.Sprintf("%08x", id)
	}
	if asJSON {
		return clitext.JSONLine(a.stdout, map[string]any{
			"resealed":      res.Resealed,
			"activeKeyId":   fmt.Sprintf("%08x", res.ActiveKeyID),
			"retiredKeyIds": retired,
			"path":          keyPath,
		})
	}
	fmt.Fprintf(a.stdout, "Re-sealed %d secret%s under key %08x (%s)\n", res.Resealed, clitext.Plural(res.Resealed), res.ActiveKeyID, keyPath)
	if len(retired) > 0 {
		fmt.Fprintf(a.stdout, "Retired key%s %s\n", clitext.Plural(len(retired)), strings.Join(retired, ", "))
	}
	return nil
}
