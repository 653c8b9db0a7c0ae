package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

func newRekeyCmd(a *app, f *brokerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rekey",
		Short: "Add a new vault key and re-seal every secret under it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runRekey(cmd.Context(), f.json)
		},
	}
}

// runRekey adds a new active key to the key file, re-seals every row under
// it (online: a running broker keeps serving and picks the new key up from
// the file), then retires the old keys.
func (a *app) runRekey(ctx context.Context, asJSON bool) error {
	env, dirs, err := a.setup()
	if err != nil {
		return err
	}
	if env.Get("OMP_VAULT_KEY") != "" {
		return errors.New("rekey rotates the key file; OMP_VAULT_KEY is set: generate a new key, add it to your secret manager next to the old one (key-file text), then rerun with --vault-key-file")
	}
	keyPath := dirs.VaultKeyPath()
	if _, err := seal.LoadKeyFile(keyPath); err != nil {
		return fmt.Errorf("vault key %s: %w", keyPath, err)
	}
	kr, err := seal.AddKey(keyPath)
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	st, err := sqlite.Open(ctx, dirs.AgentDB(), kr, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("open vault %s: %w", dirs.AgentDB(), err)
	}
	n, err := st.Reseal(ctx)
	st.Close()
	if err != nil {
		return fmt.Errorf("re-seal (the new key stays in %s; rerun rekey to finish): %w", keyPath, err)
	}
	kr, err = seal.RetireKeys(keyPath, kr.ActiveID())
	if err != nil {
		return fmt.Errorf("retire old keys: %w", err)
	}
	if asJSON {
		return writeJSONLine(a.stdout, map[string]any{"resealed": n, "activeKeyId": fmt.Sprintf("%08x", kr.ActiveID()), "path": keyPath})
	}
	fmt.Fprintf(a.stdout, "Re-sealed %d secret%s under key %08x (%s)\n", n, plural(n), kr.ActiveID(), keyPath)
	return nil
}
