// Package broker wires the auth broker: the encrypted vault, the OAuth
// refresher, the usage service and the HTTP API. cmd/broker and
// `omp auth-broker serve` are thin mains over Main; end-to-end tests run the
// same wiring on 127.0.0.1:0 with a temporary directory.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ompgo/omp/internal/buildinfo"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
	"github.com/ompgo/omp/pkg/vault/refresh"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/server"
	"github.com/ompgo/omp/pkg/vault/server/brokermetrics"
	"github.com/ompgo/omp/pkg/vault/sqlite"
	"github.com/ompgo/omp/pkg/vault/usage"
)

// DefaultBind is the broker's default listen address.
const DefaultBind = config.DefaultBrokerBind

// Config is everything the broker needs, parsed in one place by the caller.
type Config struct {
	Bind   string // host:port or port; default DefaultBind
	DBPath string // the vault (<agent dir>/vault.db); required
	// LegacyDBPath is where earlier omp-go versions kept the vault: the
	// reference's agent.db path. An omp-go vault found there (and none at
	// DBPath) is moved to DBPath once, before opening; a reference
	// agent.db there is never touched. "" = none.
	LegacyDBPath string
	TokenPath    string // bearer token file; created when absent; required
	KeyPath      string // vault key file; created when absent unless VaultKey is set
	VaultKey     string // OMP_VAULT_KEY: key material from a secret manager (wins over KeyPath)
	Version      string // default buildinfo.String()
	Logger       *slog.Logger
	HTTPClient   *http.Client // upstream calls (token, usage); default a client with sane timeouts
	// URLs returns an upstream URL override ("" = the provider default) for
	// kind "tokenUrl", "usageUrl" or "baseUrl" (config.ProviderURL).
	URLs func(provider, kind string) string

	RefreshInterval time.Duration // default 60 s
	RefreshSkew     time.Duration // default 5 min
	// RefreshMinForced is the least time between two forced refreshes of
	// one credential that reach its provider (default 30 s; negative: none).
	RefreshMinForced time.Duration
	KeepAlive        time.Duration // SSE keepalive; default 20 s
	PollInterval     time.Duration // external-write detection; default 1 s
	MetricsIdentity  bool          // allow emails in metric labels (operator opt-in)
	// TrustedProxies lists the reverse proxies (CIDR prefixes or addresses,
	// comma separated; OMP_TRUSTED_PROXIES) whose X-Forwarded-For and
	// X-Real-IP are logged as forwarded_for. Default none: logs name only
	// the connection's peer.
	TrustedProxies string
	// BodyReadTimeout is how long a request body may go without sending a
	// byte (OMP_HTTP_BODY_READ_TIMEOUT), BodyTotalTimeout how long reading
	// it may take in all; past either the request fails with 408. Defaults
	// httpx.DefaultBodyReadTimeout (30 s) and httpx.DefaultBodyTotalTimeout
	// (2 min).
	BodyReadTimeout, BodyTotalTimeout time.Duration
	// HistoryRetention is how long usage-history rows, observed client
	// usage and idle clients are kept; older rows are deleted at start and
	// then daily (expired blocks go in the same sweep). Default
	// DefaultHistoryRetention.
	HistoryRetention time.Duration
	// Demo stores the offline demo provider's credential (provider "demo",
	// key "demo") at start, so that the model demo/demo-echo answers
	// through gateways and agents without any account. Without it, a demo
	// credential left by an earlier start is disabled: the demo is on only
	// while asked for.
	Demo bool
}

// DefaultHistoryRetention is the usage-history retention: 400 days.
const DefaultHistoryRetention = 400 * 24 * time.Hour

// historySweepInterval is how often old usage-history rows are pruned.
const historySweepInterval = 24 * time.Hour

// Main is a running broker.
type Main struct {
	Config Config

	Store *sqlite.Store // the durable vault
	// Keeper wraps Store for every reader and writer of credentials (API,
	// refresher, usage, metrics): a refreshed credential whose write-back
	// failed is served from memory and retried (refresh.Keeper).
	Keeper    *refresh.Keeper
	Refresher *refresh.Refresher
	Usage     *usage.Service
	API       *server.Server

	ln      net.Listener
	url     string
	hold    *sqlite.Hold // this broker's exclusive claim on the vault
	trusted httpx.TrustedProxies
}

// URL is the base URL the broker listens on (valid after Open).
func (m *Main) URL() string { return m.url }

// Source is the broker host's credential source over its own vault (valid
// after Open): what a gateway or agent on another host reads through the HTTP
// API, read here in process.
func (m *Main) Source() *vault.LocalSource {
	return &vault.LocalSource{
		Store:      m.API.Store,
		RefreshNow: m.Refresher.RefreshNow,
		Reports:    m.Usage.Reports,
		Schedule:   m.Refresher.Schedule,
		Blocks:     m.Store,
	}
}

// Open binds the listener, then opens the vault, loads the key and token
// and builds the services. Nothing is served until Run.
func (m *Main) Open(ctx context.Context) (err error) {
	c := &m.Config
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.Version == "" {
		c.Version = buildinfo.String()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.URLs == nil {
		c.URLs = func(string, string) string { return "" }
	}
	if c.DBPath == "" || c.TokenPath == "" {
		return errors.New("broker: DBPath and TokenPath are required")
	}
	bind := c.Bind
	if bind == "" {
		bind = DefaultBind
	}
	host, port, err := config.ParseBind(bind)
	if err != nil {
		return err
	}
	if m.trusted, err = httpx.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("%s: %w", httpx.EnvTrustedProxies, err)
	}

	// Bind first: a busy port fails before the key, token or vault exists.
	if m.ln, err = config.Listen(bind, host, port); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	kr, err := m.keyring()
	if err != nil {
		return err
	}

	// One broker per vault: two would refresh the same credential with the
	// same refresh token, and a provider that detects refresh-token reuse
	// revokes the whole family. A second broker, or one started during a
	// restore, stops here with an error naming the holder; `omp auth-broker
	// restore` likewise refuses a vault a broker holds.
	if m.hold, err = sqlite.HoldVault(c.DBPath); err != nil {
		return err // names the vault, and the holder when it is known
	}
	if c.LegacyDBPath != "" {
		moved, err := sqlite.AdoptLegacy(ctx, c.LegacyDBPath, c.DBPath)
		if err != nil {
			return err
		}
		if moved {
			c.Logger.Info("auth-broker vault moved beside the reference store", "from", c.LegacyDBPath, "to", c.DBPath)
		}
	}
	api := &server.Server{Version: c.Version, Logger: c.Logger, KeepAlive: c.KeepAlive, PollInterval: c.PollInterval}
	m.Store, err = sqlite.Open(ctx, c.DBPath, kr, sqlite.Options{
		Logger:        c.Logger,
		OnChange:      func() { api.Notify() },
		ReloadKeyring: m.reloadKeyring(),
		OnDisable: func(provider, cause string) {
			c.Logger.Warn("auth-broker credential disabled", "provider", provider, "disabledCause", cause)
		},
	})
	if err != nil {
		if errors.Is(err, sqlite.ErrReferenceDB) {
			return fmt.Errorf("open vault %s: %w\nmove it aside and import it: mv %[1]s %[1]s.plain && omp auth-broker import %[1]s.plain", c.DBPath, err)
		}
		return fmt.Errorf("open vault %s: %w", c.DBPath, err)
	}

	if err := m.demo(ctx); err != nil {
		return err
	}

	token, created, err := config.EnsureToken(c.TokenPath)
	if err != nil {
		return fmt.Errorf("bearer token: %w", err)
	}
	tokenMode := config.SecureTokenFileLogged(c.Logger, "auth-broker", c.TokenPath)
	for _, w := range config.CheckPerms(c.TokenPath) {
		c.Logger.Warn(w)
	}
	if created {
		c.Logger.Info("auth-broker bearer token created", "path", c.TokenPath) // never the token
	}

	metrics := brokermetrics.New(brokermetrics.Options{IdentityLabels: c.MetricsIdentity})
	m.Keeper = &refresh.Keeper{
		Store:  m.Store,
		Logger: c.Logger,
		// The pending set changes what List serves without a store write.
		OnChange:       func() { api.Notify() },
		OnWriteFailure: metrics.ObserveWriteFailure,
	}
	m.Refresher = &refresh.Refresher{
		Store:             m.Keeper,
		OAuth:             oauth.NewRegistry(c.URLs),
		HTTP:              c.HTTPClient,
		Logger:            c.Logger,
		Interval:          c.RefreshInterval,
		Skew:              c.RefreshSkew,
		MinForcedInterval: c.RefreshMinForced,
		OnResult:          metrics.ObserveRefresh,
		// No OnChange: every refresher write goes through the store, whose
		// OnChange already notifies the API hub, or leaves a pending write
		// in the Keeper, whose OnChange does.
	}
	m.Usage = &usage.Service{
		Store:   m.Keeper,
		Cache:   m.Store,
		History: m.Store,
		Refresh: m.Refresher.RefreshNow,
		HTTP:    c.HTTPClient,
		URLs:    c.URLs,
		Logger:  c.Logger,
	}
	m.Usage.OnReport = m.healBlocks
	api.Store = m.Keeper
	api.Refresher = m.Refresher
	api.Usage = m.Usage
	api.History = m.Store
	api.Disabled = m.Store
	api.Blocks = m.Store
	api.ClientUsage = m.Store
	api.Invalidator = m.Usage
	api.Tokens = []string{token}
	api.ClientTokens = m.Store
	api.Metrics = metrics
	api.WriteBack = m.Keeper
	metrics.AttachWriteBack(m.Keeper)
	metrics.Attach(func() []vault.UsageReport {
		reports, _ := m.Usage.LatestReports()
		return reports
	})
	m.API = api

	m.url = "http://" + m.ln.Addr().String()
	if err := m.hold.Announce(m.url); err != nil {
		// The hold stands; only a refused second broker's message lacks the URL.
		c.Logger.Warn("auth-broker could not record its address beside the vault", "error", err.Error())
	}
	c.Logger.Info("auth-broker listening", "url", m.url)
	c.Logger.Info("auth-broker bearer token loaded", "path", c.TokenPath, "mode", tokenMode)
	return nil
}

// demoCause is the disabled cause of a demo credential when the broker
// starts without the demo.
const demoCause = "demo provider off"

// demo stores the demo credential when Config.Demo is set, else disables
// any demo credential. Failing to disable one is logged, not fatal: a
// vault that takes no writes still serves its credentials.
func (m *Main) demo(ctx context.Context) error {
	c := &m.Config
	if !c.Demo {
		n, err := m.Store.DisableProvider(ctx, llm.ProviderDemo, demoCause)
		if err != nil {
			c.Logger.Warn("auth-broker could not disable the demo credential", "error", err.Error())
			return nil
		}
		if n > 0 {
			c.Logger.Info("auth-broker demo provider off: its credential is disabled", "provider", llm.ProviderDemo)
		}
		return nil
	}
	cred := vault.Credential{Type: vault.TypeAPIKey, Key: llm.DemoKey}
	if _, err := m.Store.Upsert(ctx, llm.ProviderDemo, cred); err != nil {
		return fmt.Errorf("demo credential: %w", err)
	}
	c.Logger.Warn("auth-broker demo provider on: model "+llm.ProviderDemo+"/"+llm.DemoModelID+
		" answers offline; it is not a real account", "provider", llm.ProviderDemo)
	return nil
}

// keyring loads the vault key: OMP_VAULT_KEY wins, else the key file
// (created on first start).
func (m *Main) keyring() (*seal.Keyring, error) {
	c := &m.Config
	if c.VaultKey != "" {
		kr, err := seal.KeyringFromEnv(c.VaultKey)
		if err != nil {
			return nil, fmt.Errorf("OMP_VAULT_KEY: %w", err)
		}
		return kr, nil
	}
	if c.KeyPath == "" {
		return nil, errors.New("broker: no vault key: set KeyPath or VaultKey")
	}
	kr, created, err := seal.LoadOrCreateKeyFile(c.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("vault key %s: %w", c.KeyPath, err)
	}
	if created {
		c.Logger.Info("auth-broker vault key created", "path", c.KeyPath)
	}
	return kr, nil
}

// reloadKeyring is the store's hook for an online rekey (`omp auth-broker
// rekey` adds a key to the key file and makes it the vault's active key):
// it re-reads the key file. With OMP_VAULT_KEY there is nothing to re-read,
// so it is nil and writes fail with a clear error until a restart with the
// new key.
func (m *Main) reloadKeyring() func() (*seal.Keyring, error) {
	c := &m.Config
	if c.VaultKey != "" || c.KeyPath == "" {
		return nil
	}
	path, log := c.KeyPath, c.Logger
	return func() (*seal.Keyring, error) {
		kr, err := seal.LoadKeyFile(path)
		if err != nil {
			return nil, fmt.Errorf("vault key %s: %w", path, err)
		}
		log.Info("auth-broker vault key file reloaded", "path", path, "key_ids", seal.FormatIDs(kr.IDs()))
		return kr, nil
	}
}

// Run serves until ctx is cancelled, then shuts down gracefully.
func (m *Main) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.API.Run(ctx) })
	g.Go(func() error { return m.Refresher.Run(ctx) })
	g.Go(func() error { return m.Keeper.Run(ctx) })
	g.Go(func() error { m.prune(ctx); return nil })
	g.Go(func() error {
		return httpx.Serve(ctx, m.ln, m.API.Handler(), httpx.ServeOptions{
			Logger:           m.Config.Logger,
			TrustedProxies:   m.trusted,
			BodyReadTimeout:  m.Config.BodyReadTimeout,
			BodyTotalTimeout: m.Config.BodyTotalTimeout,
		})
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// prune deletes usage-history and client-usage rows older than the
// retention, idle clients and expired blocks now and then every day until
// ctx ends. Failures are logged; the next sweep
// retries.
func (m *Main) prune(ctx context.Context) {
	keep := m.Config.HistoryRetention
	if keep <= 0 {
		keep = DefaultHistoryRetention
	}
	t := time.NewTicker(historySweepInterval)
	defer t.Stop()
	for {
		before := time.Now().Add(-keep).UnixMilli()
		if n, err := m.Store.PruneUsageHistory(ctx, before); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.Config.Logger.Warn("auth-broker usage history prune failed", "error", err.Error())
		} else if n > 0 {
			m.Config.Logger.Info("auth-broker usage history pruned", "rows", n, "beforeMs", before)
		}
		if n, err := m.Store.PruneClientUsage(ctx, before); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.Config.Logger.Warn("auth-broker client usage prune failed", "error", err.Error())
		} else if n > 0 {
			m.Config.Logger.Info("auth-broker client usage pruned", "rows", n, "beforeMs", before)
		}
		if _, err := m.Store.PruneBlocks(ctx, time.Now().UnixMilli()); err != nil && ctx.Err() == nil {
			m.Config.Logger.Warn("auth-broker expired blocks prune failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// healBlocks is the usage service's OnReport: a fresh report that shows a
// block scope healthy lifts the credential's block for it, unless the
// block was posted within healGrace. Each heal advances the
// generation, so the fleet sees it.
func (m *Main) healBlocks(ctx context.Context, id int64, provider string, rep *vault.UsageReport) {
	key, scopes := usage.HealthyScopes(provider, rep)
	if len(scopes) == 0 {
		return
	}
	n, err := m.Store.HealBlocks(ctx, id, key, scopes, time.Now().Add(-healGrace).UnixMilli())
	switch {
	case err != nil:
		m.Config.Logger.Warn("auth-broker block healing failed", "id", id, "provider", provider, "error", vault.ErrorMessage(err))
	case n > 0:
		m.Config.Logger.Info("auth-broker credential blocks healed", "id", id, "provider", provider, "providerKey", key, "blocks", n)
	}
}

// healGrace is how long a posted block is safe from healing (the
// reference's updated_at + 300000 ms).
const healGrace = 5 * time.Minute

// Close releases the vault and background work. Call it after Run has
// returned (Serve does): closing under a running Run pulls the store from
// under the API and the refresher. It is safe to call twice.
func (m *Main) Close() error {
	var errs []error
	if m.Usage != nil {
		m.Usage.Close()
	}
	if m.ln != nil {
		m.ln.Close()
	}
	switch {
	case m.Keeper != nil:
		// One more try for pending write-backs, then the store closes.
		errs = append(errs, m.Keeper.Close())
		m.Keeper, m.Store = nil, nil
	case m.Store != nil:
		errs = append(errs, m.Store.Close())
		m.Store = nil
	}
	m.hold.Release()
	m.hold = nil
	return errors.Join(errs...)
}

// Serve opens a broker with cfg, runs it until ctx is cancelled and closes
// it: the whole life of `omp auth-broker serve` and cmd/broker.
func Serve(ctx context.Context, cfg Config) error {
	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	err := m.Run(ctx)
	m.Config.Logger.Info("auth-broker shutting down", "signal", context.Cause(ctx))
	return err
}
