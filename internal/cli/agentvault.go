package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

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
	src := &vaultSource{path: path, store: store, progress: progress, log: a.warnLogger(),
		oauth: oauth.NewRegistry(config.URLs{Env: env, Settings: settings}.URL)}
	src.read = &vault.LocalSource{Store: store}
	return &agentBroker{picker: &vaultpick.Picker{Source: src, Policies: policies}, vault: path, stop: src.close}, nil
}

// vaultSource is the local vault as the agent's vault.Source.
//
// Only one process refreshes a vault's OAuth credentials at a time: two
// would spend the same refresh token twice, and a provider that detects the
// reuse revokes the whole token family. The first refresh the agent needs
// claims the vault (sqlite.HoldVaultToRefresh) for the rest of the run;
// from then on reads and refreshes go through a Keeper, so a rotated
// refresh token is never lost. While a broker or another local process
// holds the vault, nothing is refreshed: the stored access tokens are used
// as they are, and a broker's address is named once on progress.
type vaultSource struct {
	path     string
	store    *sqlite.Store
	oauth    *oauth.Registry
	progress io.Writer
	log      *slog.Logger

	mu     sync.Mutex
	read   *vault.LocalSource // reads (and, once held, refreshes)
	hold   *sqlite.Hold       // nil until the first refresh claims the vault
	keeper *refresh.Keeper
	ref    *refresh.Refresher
	told   bool // the broker holding the vault was named on progress
}

var _ vault.Source = (*vaultSource)(nil)

func (s *vaultSource) source() *vault.LocalSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

func (s *vaultSource) Snapshot(ctx context.Context) (vault.Snapshot, error) {
	return s.source().Snapshot(ctx)
}

func (s *vaultSource) Get(ctx context.Context, id int64) (vault.Entry, error) {
	return s.source().Get(ctx, id)
}

func (s *vaultSource) List(ctx context.Context, provider string) ([]vault.Entry, error) {
	return s.source().List(ctx, provider)
}

// Usage has no reports: the agent does not probe usage.
func (s *vaultSource) Usage(context.Context) ([]vault.UsageReport, error) {
	return []vault.UsageReport{}, nil
}

// Refresh refreshes credential id once this process holds the vault
// (claiming it on the first call); while another process holds it, it
// fails EUNAVAILABLE saying who.
func (s *vaultSource) Refresh(ctx context.Context, id int64) (vault.Entry, error) {
	src, err := s.claim()
	if err != nil {
		return vault.Entry{}, err
	}
	return src.Refresh(ctx, id)
}

// claim returns the refreshing source, taking the vault's hold and
// starting the Keeper when this process does not hold it yet.
func (s *vaultSource) claim() (*vault.LocalSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		return s.read, nil
	}
	hold, err := sqlite.HoldVaultToRefresh(s.path)
	var held *sqlite.HeldError
	if errors.As(err, &held) {
		text := heldRefreshText(held)
		if held.Role == "broker" && !s.told {
			s.told = true
			fmt.Fprintf(s.progress, "omp: %s\n", clitext.SafeLine(text))
		}
		return nil, vault.Errorf(vault.EUNAVAILABLE, "%s", text)
	}
	if err != nil {
		return nil, err
	}
	s.keeper = &refresh.Keeper{Store: s.store, Logger: s.log}
	go func() { _ = s.keeper.Run(context.Background()) }() // ended by Close
	s.ref = &refresh.Refresher{Store: s.keeper, OAuth: s.oauth, HTTP: &http.Client{}, Logger: s.log}
	s.hold, s.read = hold, &vault.LocalSource{Store: s.keeper, RefreshNow: s.ref.RefreshNow}
	return s.read, nil
}

// close waits for running refreshes, lands every pending write, closes
// the vault and drops the hold.
func (s *vaultSource) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.store.Close()
		return
	}
	s.ref.Wait()
	if err := s.keeper.Close(); err != nil { // closes the store
		s.log.Warn("vault close failed", "error", err)
	}
	s.hold.Release()
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
