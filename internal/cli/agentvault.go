package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/refresh"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// openAgentVault is the agent's credential source without a broker: the
// local vault that `omp login` writes and `omp auth-broker serve` serves,
// read through the same picker as broker mode. It returns nil when there is
// no vault, it holds no active credential or it cannot be read (with a
// warning on progress); it never creates one.
//
// Only one process refreshes a vault's OAuth credentials at a time (two
// would spend the same refresh token twice, and a provider that detects the
// reuse revokes the whole token family). When no one else holds the vault,
// the agent holds it for its run and refreshes access tokens near expiry
// (and after a 401/403) through a Keeper, so a rotated refresh token is
// never lost. When a broker or another local process holds it, the agent
// uses the stored access tokens as they are and never refreshes; for a
// broker it says on progress how to use that broker instead.
func (a *app) openAgentVault(ctx context.Context, env *config.Env, dirs config.Dirs, settings *config.Settings, progress io.Writer) (*agentBroker, error) {
	path := dirs.VaultDB()
	if !exists(path) || env.Get("OMP_VAULT_KEY") == "" && !exists(dirs.VaultKeyPath()) {
		return nil, nil // no vault, or none this user can open: nothing is created
	}
	policies, err := settings.AccountPolicies()
	if err != nil {
		return nil, err
	}
	// A vault that cannot be read costs its credentials, not the run: the
	// other rungs of the key ladder still work.
	store, _, err := a.openLocalVault(ctx)
	if err != nil {
		fmt.Fprintf(progress, "Warning: local vault not used: %v\n", err)
		return nil, nil
	}
	recs, err := store.List(ctx, "")
	if err != nil || len(recs) == 0 {
		store.Close()
		if err != nil {
			fmt.Fprintf(progress, "Warning: local vault not used: %v\n", err)
		}
		return nil, nil
	}
	src := &vault.LocalSource{Store: store}
	ab := &agentBroker{picker: &vaultpick.Picker{Source: src, Policies: policies}, vault: path}
	hold, err := sqlite.HoldVaultToRefresh(path)
	var held *sqlite.HeldError
	switch {
	case err == nil:
		log := a.warnLogger()
		keeper := &refresh.Keeper{Store: store, Logger: log}
		go func() { _ = keeper.Run(context.Background()) }() // ended by Close
		ref := &refresh.Refresher{Store: keeper, OAuth: oauth.NewRegistry(config.URLs{Env: env, Settings: settings}.URL),
			HTTP: &http.Client{}, Logger: log}
		src.Store, src.RefreshNow = keeper, ref.RefreshNow
		ab.stop = func() {
			ref.Wait()
			if err := keeper.Close(); err != nil { // closes the store
				log.Warn("vault close failed", "error", err)
			}
			hold.Release()
		}
	case errors.As(err, &held):
		src.RefreshNow = func(context.Context, int64) (vault.Record, error) {
			return vault.Record{}, vault.Errorf(vault.EUNAVAILABLE, "%s", heldRefreshText(held))
		}
		if held.Role == "broker" {
			fmt.Fprintf(progress, "omp: %s\n", clitext.SafeLine(heldRefreshText(held)))
		}
		ab.stop = func() { store.Close() }
	default:
		store.Close()
		return nil, err
	}
	return ab, nil
}

// heldRefreshText says why the agent does not refresh the local vault's
// credentials while h's holder does, and for a broker how to use it.
func heldRefreshText(h *sqlite.HeldError) string {
	if h.Role != "broker" {
		return "not refreshing credentials of the local vault: " + h.Error()
	}
	who, addr := "", h.Addr
	if h.PID != 0 {
		who = fmt.Sprintf(" (pid %d)", h.PID)
	}
	if addr == "" {
		addr = "<its address>"
	}
	return fmt.Sprintf("an auth broker%s serves the local vault %s and refreshes its tokens; "+
		"its stored access tokens are used as they are. Set %s=%s to use the broker", who, h.Vault, config.EnvBrokerURL, addr)
}
