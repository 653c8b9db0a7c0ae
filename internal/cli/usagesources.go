package cli

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/ompgo/omp/internal/cli/usageview"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/llm/catalog"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/oauth"
	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/refresh"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/sqlite"
	"github.com/ompgo/omp/pkg/vault/usage"
)

// The two usage sources of `omp usage`: brokerUsage reads a broker's
// reports (with the snapshot cache standing in while it is away), and
// localUsage probes the providers with the local vault.

// usageSource picks the broker when one is configured, else the local vault.
func (a *app) usageSource(ctx context.Context) (usageSource, error) {
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return nil, err
	}
	if bc != nil {
		env, _, err := a.setup()
		if err != nil {
			return nil, err
		}
		pool, err := remote.LoadPool(env.Get(remote.EnvAccountPoolFile))
		if err != nil {
			return nil, err // an unusable pool file fails before the first broker request
		}
		_, dirs, err := a.setup()
		if err != nil {
			return nil, err
		}
		warn := a.warnLogger()
		return &brokerUsage{broker: bc, dirs: dirs, client: brokerclient.New(bc.URL, bc.Token, nil), pool: pool,
			cache: snapshotCache(env, dirs, bc, warn), warn: warn}, nil
	}
	return a.localUsage(ctx)
}

// brokerUsage reads the broker: GET /v1/usage with the snapshot for the
// account list, and GET /v1/usage/history for --history. A snapshot
// fetched live is written to the snapshot cache; when the fetch fails, a
// fresh cached snapshot lists the accounts instead.
type brokerUsage struct {
	broker *config.Broker
	dirs   config.Dirs // where the broker token came from, for errors
	client *brokerclient.Client
	pool   remote.Pool           // the account pool; nil: every account
	cache  *remote.Cache         // the snapshot cache; nil: none
	warn   *slog.Logger          // says why usage data is missing
	gone   []usageview.Tombstone // fetched by live, alongside the reports
}

func (b *brokerUsage) close() {}

// live returns the broker's usage reports and the accounts of its
// snapshot. A failed GET /v1/usage means no reports: the accounts are
// listed without usage data, each saying why. Only a snapshot that is
// neither fetched nor cached fails.
func (b *brokerUsage) live(ctx context.Context) ([]vault.UsageReport, []usageview.Account, error) {
	var u api.Usage
	var snap brokerclient.SnapshotResult
	var usageErr, snapErr error
	var wg sync.WaitGroup
	wg.Go(func() { u, usageErr = b.client.Usage(ctx) })
	wg.Go(func() { snap, snapErr = b.client.Snapshot(ctx, nil, 0) })
	wg.Go(func() { b.gone, _ = b.client.DisabledCredentials(ctx, "") }) // best effort
	wg.Wait()
	// A rejected token is not an outage: neither the cache nor an empty
	// usage list stands in for it.
	for _, err := range []error{snapErr, usageErr} {
		if _, ok := brokerAuthFailed(err); ok {
			return nil, nil, err
		}
	}
	var creds []vault.Entry
	switch {
	case snapErr == nil && snap.Snapshot != nil:
		creds = snap.Snapshot.Credentials
		if b.cache != nil && snap.Raw != nil {
			if err := b.cache.Write(snap.Raw); err != nil {
				b.log().Debug("auth-broker snapshot cache write failed", "error", err.Error())
			}
		}
	case snapErr != nil:
		var cached vault.Snapshot
		err := remote.ErrCacheAbsent
		if b.cache != nil {
			cached, err = b.cache.Read()
		}
		if err != nil {
			if brokerUnreachable(snapErr) {
				return nil, nil, unreachableError(b.broker, snapErr)
			}
			return nil, nil, snapErr
		}
		creds = cached.Credentials
	}
	var accounts []usageview.Account
	var pooled []vault.Entry // OAuth entries of pooled providers inside the pool
	for _, e := range creds {
		if !b.pool.Allows(e) {
			continue
		}
		if _, ok := b.pool[e.Provider]; ok && e.Credential.Type == vault.TypeOAuth {
			pooled = append(pooled, e)
		}
		accounts = append(accounts, accountOf(e.Provider, e.Credential))
	}
	if usageErr != nil {
		why := "usage unavailable: " + brokerReason(usageErr)
		b.log().Warn("auth-broker usage unavailable; accounts listed without usage data", "error", brokerReason(usageErr))
		for i := range accounts {
			accounts[i].Reason = why
		}
		return nil, accounts, nil
	}
	return b.poolReports(u.Reports, pooled), accounts, nil
}

func (b *brokerUsage) log() *slog.Logger {
	if b.warn == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.warn
}

// poolReports keeps the reports of pooled providers only when they belong
// to an in-pool OAuth credential; other providers' reports
// pass.
func (b *brokerUsage) poolReports(reports []vault.UsageReport, pooled []vault.Entry) []vault.UsageReport {
	if b.pool == nil {
		return reports
	}
	var out []vault.UsageReport
	for i, r := range reports {
		if _, ok := b.pool[r.Provider]; !ok {
			out = append(out, r)
			continue
		}
		for _, e := range pooled {
			if e.Provider == r.Provider && vaultpick.MatchReport(r.Provider, e.Credential, reports[i:i+1]) != nil {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

func (b *brokerUsage) disabled(context.Context) []usageview.Tombstone { return b.gone }

func (b *brokerUsage) history(ctx context.Context, since int64, provider string) ([]vault.UsageHistoryEntry, error) {
	h, err := b.client.UsageHistory(ctx, since, provider)
	var be *brokerclient.Error
	if errors.As(err, &be) && be.Status == http.StatusNotFound {
		return nil, nil // a broker before 17.1.2: the reference's empty history
	}
	if err != nil {
		// The history lives only in the broker: nothing cached stands in.
		return nil, brokerFailure(b.broker, b.dirs, err)
	}
	return h.Entries, nil
}

// localUsage probes directly with the local vault (on the broker host, or
// with environment API keys only when there is no vault).
type localUsage struct {
	store  *sqlite.Store // nil without a vault
	unhold func()        // drops the claim to refresh; nil without one
	keeper *refresh.Keeper
	stop   context.CancelFunc
	svc    *usage.Service
}

func (a *app) localUsage(ctx context.Context) (*localUsage, error) {
	env, dirs, err := a.setup()
	if err != nil {
		return nil, err
	}
	log := a.warnLogger()
	settings, err := config.LoadSettings(dirs.AgentDir, log)
	if err != nil {
		return nil, err
	}
	l := &localUsage{}
	l.svc = &usage.Service{
		HTTP:   &http.Client{Timeout: 30 * time.Second},
		URLs:   config.URLs{Env: env, Settings: settings}.URL,
		APIKey: func(p string) string { return config.EnvAPIKey(env, p) },
		Logger: log,
	}
	// A models.yml provider baseUrl moves the Codex and Anthropic probes by
	// the 18.1.21 rules; an unreadable file is ignored
	// here (the agent reports it).
	if models, err := catalog.Load(filepath.Join(dirs.AgentDir, "models.yml")); err == nil {
		l.svc.ModelBaseURL = func(p string) string { return models.Providers[p].BaseURL }
	}
	// No vault yet: do not create one (and its key) just to show usage. An
	// agent.db may be an omp-go vault from before the move to vault.db,
	// which openLocalVault adopts.
	if exists(dirs.VaultDB()) || exists(dirs.AgentDB()) {
		if l.store, _, err = a.openLocalVault(ctx); err != nil {
			return nil, err
		}
		l.svc.Cache, l.svc.History = l.store, l.store
		// While a broker serves this vault it alone refreshes: a second
		// refresher would spend the same refresh token twice, and a
		// provider that detects the reuse revokes the whole family. The
		// probes then use the access tokens the broker keeps fresh.
		hold, err := sqlite.HoldVaultToRefresh(dirs.VaultDB())
		if err != nil {
			if !errors.Is(err, sqlite.ErrVaultInUse) {
				l.store.Close()
				return nil, err
			}
			l.svc.Store = l.store
			return l, nil
		}
		l.unhold = hold.Release
		// An OAuth access token at or near expiry is refreshed before its
		// probe, as the broker does; a rotated refresh token is written
		// through a Keeper, which retries a failed write until close.
		l.keeper = &refresh.Keeper{Store: l.store, Logger: log}
		var kctx context.Context
		kctx, l.stop = context.WithCancel(context.WithoutCancel(ctx))
		go l.keeper.Run(kctx)
		ref := &refresh.Refresher{Store: l.keeper, OAuth: oauth.NewRegistry(l.svc.URLs), HTTP: l.svc.HTTP, Logger: log}
		l.svc.Store, l.svc.Refresh = l.keeper, ref.RefreshNow
	}
	return l, nil
}

func (l *localUsage) close() {
	l.svc.Close()
	switch {
	case l.keeper != nil:
		l.stop()
		if err := l.keeper.Close(); err != nil { // closes the store
			l.svc.Logger.Warn("vault close failed", "error", err)
		}
	case l.store != nil:
		l.store.Close()
	}
	if l.unhold != nil {
		l.unhold()
	}
}

func (l *localUsage) live(ctx context.Context) ([]vault.UsageReport, []usageview.Account, error) {
	reports, err := l.svc.Reports(ctx)
	if err != nil {
		return nil, nil, err
	}
	var accounts []usageview.Account
	if l.store != nil {
		recs, err := l.store.List(ctx, "")
		if err != nil {
			return nil, nil, err
		}
		for _, r := range recs {
			accounts = append(accounts, accountOf(r.Provider, r.Credential))
		}
	}
	return reports, accounts, nil
}

func (l *localUsage) disabled(ctx context.Context) []usageview.Tombstone {
	if l.store == nil {
		return nil
	}
	recs, _ := l.store.ListDisabled(ctx, "")
	out := make([]usageview.Tombstone, 0, len(recs))
	for _, r := range recs {
		out = append(out, api.NewDisabledCredential(r))
	}
	return out
}

func (l *localUsage) history(ctx context.Context, since int64, provider string) ([]vault.UsageHistoryEntry, error) {
	if l.store == nil {
		return nil, nil
	}
	return l.store.UsageHistory(ctx, since, provider)
}
