package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// openLocalVault opens the broker host's vault (the commands that run on
// the broker host: logout, import without a broker, migrate's local side,
// rekey). The key comes from OMP_VAULT_KEY or the key file, created on first
// use like the broker does.
func (a *app) openLocalVault(ctx context.Context) (*sqlite.Store, string, error) {
	env, dirs, err := a.setup()
	if err != nil {
		return nil, "", err
	}
	var kr *seal.Keyring
	if v := env.Get("OMP_VAULT_KEY"); v != "" {
		if kr, err = seal.KeyringFromEnv(v); err != nil {
			return nil, "", fmt.Errorf("OMP_VAULT_KEY: %w", err)
		}
	} else if kr, _, err = seal.LoadOrCreateKeyFile(dirs.VaultKeyPath()); err != nil {
		return nil, "", fmt.Errorf("vault key %s: %w", dirs.VaultKeyPath(), err)
	}
	path, err := a.adoptVault(ctx, dirs)
	if err != nil {
		return nil, "", err
	}
	st, err := sqlite.Open(ctx, path, kr, sqlite.Options{})
	if errors.Is(err, sqlite.ErrReferenceDB) {
		return nil, "", fmt.Errorf("%w; move it aside and import it: mv %[2]s %[2]s.plain && omp auth-broker import %[2]s.plain", err, path)
	}
	if err != nil {
		return nil, "", err // sqlite.Open names the vault path already
	}
	return st, path, nil
}

// adoptVault returns the vault path (vault.db), first moving an omp-go
// vault left at the reference's agent.db path by an earlier version
// (a reference agent.db is never touched).
func (a *app) adoptVault(ctx context.Context, dirs config.Dirs) (string, error) {
	path := dirs.VaultDB()
	if _, err := sqlite.AdoptLegacy(ctx, dirs.AgentDB(), path); err != nil {
		return "", err
	}
	return path, nil
}

// pick shows a numbered picker and returns the chosen item.
func pick(r io.Reader, w io.Writer, title string, items []string) (string, error) {
	fmt.Fprintf(w, "%s\n\n", title)
	for i, it := range items {
		fmt.Fprintf(w, "  %d. %s\n", i+1, it)
	}
	fmt.Fprintf(w, "\nEnter number (1-%d): ", len(items))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("Login cancelled")
	}
	choice := strings.TrimSpace(line)
	n, err := strconv.Atoi(choice)
	if err != nil || n < 1 || n > len(items) {
		return "", fmt.Errorf("Invalid selection: %s", choice)
	}
	return items[n-1], nil
}
