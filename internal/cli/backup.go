package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func newBackupCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup <file>",
		Short: "Write a consistent, still sealed copy of the vault (safe while the broker runs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runBackup(cmd.Context(), args[0], f.vaultKeyFile, f.json)
		},
	}
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file that verifies the copy (default OMP_VAULT_KEY, else <config-dir>/vault.key)")
	return cmd
}

func newRestoreCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore <file>",
		Short: "Replace the vault with a backup (stop the broker first; the old vault is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRestore(cmd.Context(), args[0], f.vaultKeyFile, f.json)
		},
	}
	cmd.Flags().StringVar(&f.vaultKeyFile, "vault-key-file", "", "vault key file that opens the backup (default OMP_VAULT_KEY, else <config-dir>/vault.key)")
	return cmd
}

// backupKeyring loads the key that verifies a backup: the --vault-key-file,
// else OMP_VAULT_KEY, else the broker's key file. Unlike the broker it never
// creates a key: a fresh key cannot open an existing vault.
func (a *app) backupKeyring(keyPath string) (*seal.Keyring, string, error) {
	env, dirs, err := a.setup()
	if err != nil {
		return nil, "", err
	}
	if keyPath == "" {
		if v := env.Get("OMP_VAULT_KEY"); v != "" {
			kr, err := seal.KeyringFromEnv(v)
			if err != nil {
				return nil, "", fmt.Errorf("OMP_VAULT_KEY: %w", err)
			}
			return kr, dirs.VaultDB(), nil
		}
		keyPath = dirs.VaultKeyPath()
	}
	kr, err := seal.LoadKeyFile(keyPath)
	if err != nil {
		return nil, "", fmt.Errorf("vault key %s: %w", keyPath, err)
	}
	return kr, dirs.VaultDB(), nil
}

// adoptLegacyVault moves a vault an earlier omp-go kept at the reference's
// agent.db path to db first, as every vault command does, so backup and
// restore act on the vault the broker will open.
func (a *app) adoptLegacyVault(ctx context.Context, db string) error {
	_, dirs, err := a.setup()
	if err != nil {
		return err
	}
	_, err = sqlite.AdoptLegacy(ctx, dirs.AgentDB(), db)
	return err
}

// runBackup implements `backup <file>`: a verified copy of the broker host's
// vault, verified with the key.
func (a *app) runBackup(ctx context.Context, file, keyPath string, asJSON bool) error {
	kr, db, err := a.backupKeyring(keyPath)
	if err != nil {
		return err
	}
	if err := a.adoptLegacyVault(ctx, db); err != nil {
		return err
	}
	info, err := sqlite.Backup(ctx, db, file, kr)
	if err != nil {
		return err
	}
	if asJSON {
		return clitext.JSONLine(a.stdout, info)
	}
	fmt.Fprintf(a.stdout, "Backed up %s to %s: %d credential%s (%d active), %d bytes, verified with key %s (the copy is sealed: keep the key file too, apart from it)\n",
		db, info.Path, info.Credentials, clitext.Plural(info.Credentials), info.Active, info.Bytes, info.KeyID)
	return nil
}

// runRestore implements `restore <file>`: a backup restored over the broker
// host's vault, refused while a broker serves it.
func (a *app) runRestore(ctx context.Context, file, keyPath string, asJSON bool) error {
	kr, db, err := a.backupKeyring(keyPath)
	if err != nil {
		return err
	}
	if err := a.adoptLegacyVault(ctx, db); err != nil {
		return err
	}
	res, err := sqlite.Restore(ctx, file, db, kr)
	if err != nil {
		return err
	}
	if asJSON {
		return clitext.JSONLine(a.stdout, res)
	}
	fmt.Fprintf(a.stdout, "Restored %s from %s: %d credential%s (%d active)\n", res.Path, file, res.Credentials, clitext.Plural(res.Credentials), res.Active)
	if res.Previous != "" {
		fmt.Fprintf(a.stdout, "The replaced vault is kept as %s\n", res.Previous)
	}
	return nil
}
