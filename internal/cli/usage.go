package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/cli/usageview"
	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
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

// dayMs is one day in milliseconds.
const dayMs = 86_400_000

// usageFlags are the flags of `omp usage`.
type usageFlags struct {
	json     bool
	provider string
	redact   bool
	history  bool
	days     int
}

func newUsageCmd(a *app) *cobra.Command {
	f := &usageFlags{}
	cmd := &cobra.Command{
		Use:   "usage [" + strings.Join(usageActionNames(), "|") + "]",
		Short: "Show provider usage per account (quota bars, resets, capacity; --history for sparklines)",
		Long:  usageLong(),
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return nil
			case len(args) == 1 && slices.Contains(usageActionNames(), args[0]):
				return nil
			}
			return fmt.Errorf("Expected action to be one of: %s; got %q", strings.Join(usageActionNames(), ", "), args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] == "invalidate" {
					return a.runUsageInvalidate(cmd.Context(), *f)
				}
				return a.runUsageClients(cmd.Context(), *f)
			}
			return a.runUsage(cmd.Context(), *f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.json, "json", "j", false, "print JSON (stable, for widgets)")
	fl.StringVarP(&f.provider, "provider", "p", "", "only this provider (case-insensitive)")
	fl.BoolVarP(&f.redact, "redact", "r", false, "mask emails and account ids")
	fl.BoolVar(&f.history, "history", false, "show recorded usage history instead of a live snapshot")
	fl.IntVarP(&f.days, "days", "d", 7, "history window in days (non-positive → 7)")
	return cmd
}

// usageActions are the actions of `omp usage`, each with its help text.
var usageActions = []struct{ name, help string }{
	{"invalidate", "expire the cached usage (locally, and on the broker when one is configured)"},
	{"clients", "show the usage per broker client over the last --days days"},
}

func usageActionNames() []string {
	names := make([]string, len(usageActions))
	for i, a := range usageActions {
		names[i] = a.name
	}
	return names
}

// usageLong is the help of `omp usage`: the live view, then every action.
func usageLong() string {
	var b strings.Builder
	b.WriteString(`Show provider usage per account (quota bars, resets, capacity; --history for sparklines).

Every stored account is listed; one without usage data says why (its
provider has no usage API, its credential type has no usage endpoint, or
the probe returned nothing).

Actions:
`)
	for _, a := range usageActions {
		fmt.Fprintf(&b, "  %-12s %s\n", a.name, a.help)
	}
	b.WriteString(`
Exit status:
  0  usage shown; --json always exits 0, an empty payload included
  1  the text has nothing to show: no credentials (add one with
     omp auth-broker login <provider>), none for --provider, or no
     recorded history yet; also any error`)
	return b.String()
}

// usageSource is where `omp usage` reads from: the broker when one is
// configured (OMP_AUTH_BROKER_URL or auth.broker.url), else the local
// vault, probed directly.
type usageSource interface {
	live(ctx context.Context) ([]vault.UsageReport, []usageview.Account, error)
	// disabled lists the tombstones of soft-deleted credentials (best
	// effort: usage output never fails because of it).
	disabled(ctx context.Context) []usageview.Tombstone
	// history returns the recorded entries since sinceMs (none from a
	// broker older than 17.1.2, which has no history route).
	history(ctx context.Context, sinceMs int64, provider string) ([]vault.UsageHistoryEntry, error)
	close()
}

func (a *app) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return time.Now()
}

// colour reports whether stdout takes colour: a terminal, and NO_COLOR
// unset or empty.
func (a *app) colour() bool {
	if env, _, err := a.setup(); err == nil && env.Get("NO_COLOR") != "" {
		return false
	}
	f, ok := a.stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runUsage implements `omp usage`.
func (a *app) runUsage(ctx context.Context, f usageFlags) error {
	src, err := a.usageSource(ctx)
	if err != nil {
		return err
	}
	defer src.close()
	provider := strings.ToLower(f.provider)
	now := a.now().UnixMilli()
	if f.history {
		days := f.days
		if days <= 0 {
			days = 7
		}
		since := now - int64(days)*dayMs
		entries, err := src.history(ctx, since, provider)
		if err != nil {
			return err
		}
		var red map[string]string
		if f.redact {
			red = usageview.RedactionMap(usageview.HistoryIdentityStrings(entries))
		}
		if f.json {
			if entries == nil {
				entries = []vault.UsageHistoryEntry{}
			}
			return writeJSONIndent(a, struct {
				GeneratedAt int64                     `json:"generatedAt"`
				SinceMs     int64                     `json:"sinceMs"`
				Entries     []vault.UsageHistoryEntry `json:"entries"`
			}{now, since, usageview.RedactHistory(entries, red)})
		}
		if len(entries) == 0 {
			return &exitError{code: 1, msg: "No usage history recorded" + scopeOf(f.provider) +
				" yet. Snapshots accumulate whenever usage is fetched (TUI footer, /usage, omp usage)."}
		}
		_, err = fmt.Fprint(a.stdout, usageview.Render(usageview.History(entries, since, now, red), a.colour()))
		return err
	}

	reports, stored, err := src.live(ctx)
	if err != nil {
		return err
	}
	accounts := stored
	if provider == "" {
		accounts = reportable(stored)
	} else {
		reports = filter(reports, func(r vault.UsageReport) bool { return strings.ToLower(r.Provider) == provider })
		accounts = filter(accounts, func(u usageview.Account) bool { return strings.ToLower(u.Provider) == provider })
	}
	var gone []usageview.Tombstone
	for _, d := range src.disabled(ctx) {
		if (provider == "" || strings.ToLower(d.Provider) == provider) && usageview.Actionable(d, accounts) {
			gone = append(gone, d)
		}
	}
	var red map[string]string
	if f.redact {
		red = usageview.RedactionMap(append(usageview.IdentityStrings(reports, accounts), usageview.TombstoneIdentities(gone)...))
	}
	if f.json {
		unreported := usageview.UnreportedAccounts(reports, accounts)
		caps := map[string][]usageview.CapacityStat{}
		for _, r := range reports {
			if _, ok := caps[r.Provider]; !ok {
				if st := usageview.Capacity(filter(reports, func(o vault.UsageReport) bool { return o.Provider == r.Provider })); len(st) > 0 {
					caps[r.Provider] = st
				}
			}
		}
		out := reports
		if red != nil {
			out, unreported, gone = usageview.RedactReports(reports, red), usageview.RedactAccounts(unreported, red), usageview.RedactTombstones(gone, red)
		}
		return writeJSONIndent(a, struct {
			GeneratedAt          int64                               `json:"generatedAt"`
			Reports              []vault.UsageReport                 `json:"reports"`
			AccountsWithoutUsage []usageview.Account                 `json:"accountsWithoutUsage"`
			DisabledCredentials  []usageview.Tombstone               `json:"disabledCredentials"`
			Capacity             map[string][]usageview.CapacityStat `json:"capacity"`
		}{now, orEmpty(out), orEmpty(unreported), orEmpty(gone), caps})
	}
	// The text lists every stored account, also those of providers without
	// a usage probe, each with the reason it has no usage data.
	listed := withReasons(filter(stored, func(u usageview.Account) bool {
		return provider == "" || strings.ToLower(u.Provider) == provider
	}))
	if len(reports) == 0 && len(listed) == 0 && len(gone) == 0 {
		if len(stored) > 0 {
			return &exitError{code: 1, msg: "No usage data" + scopeOf(f.provider) + ". Stored credentials are for providers without a usage endpoint."}
		}
		return &exitError{code: 1, msg: noCredentialsMsg(f.provider)}
	}
	_, err = fmt.Fprint(a.stdout, usageview.Render(usageview.Breakdown(reports, listed, gone, now, red), a.colour()))
	return err
}

// noCredentialsMsg is the empty-vault message; it names the command that
// adds an account.
func noCredentialsMsg(provider string) string {
	login := "omp auth-broker login <provider>"
	if provider != "" {
		login = "omp auth-broker login " + strings.ToLower(provider)
	}
	return "No credentials found" + scopeOf(provider) + ". Run `" + login + "` to add an account."
}

// withReasons sets why each account may lack usage data: its provider has
// no usage probe, or the probe does not serve its credential type; an
// account whose probe ran keeps the plain "no usage data".
func withReasons(accounts []usageview.Account) []usageview.Account {
	probers := map[string]usage.Prober{}
	for _, p := range usage.DefaultProbers() {
		probers[p.ID()] = p
	}
	out := make([]usageview.Account, len(accounts))
	for i, u := range accounts {
		p, ok := probers[u.Provider]
		typ := vault.CredentialType(u.Type)
		switch {
		case !ok:
			u.Reason = "provider has no usage API"
		case p.Supports(vault.Credential{Type: typ, Access: "-", Key: "-"}):
		case typ == vault.TypeAPIKey:
			u.Reason = "no usage endpoint for API keys"
		default:
			u.Reason = "no usage endpoint for OAuth logins"
		}
		out[i] = u
	}
	return out
}

func scopeOf(provider string) string {
	if provider == "" {
		return ""
	}
	return fmt.Sprintf(" for provider %q", provider)
}

func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// reportable keeps the accounts whose provider has a usage probe.
func reportable(accounts []usageview.Account) []usageview.Account {
	probed := map[string]bool{}
	for _, p := range usage.DefaultProbers() {
		probed[p.ID()] = true
	}
	return filter(accounts, func(u usageview.Account) bool { return probed[u.Provider] })
}

// writeJSONIndent writes v with a 2-space indent and a newline.
func writeJSONIndent(a *app, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", clitext.SafeJSON(b))
	return err
}

// accountOf is the identity slice of a stored credential.
func accountOf(provider string, c vault.Credential) usageview.Account {
	u := usageview.Account{Provider: provider, Type: string(c.Type)}
	if c.Type != vault.TypeOAuth {
		return u
	}
	u.Email, u.AccountID, u.ProjectID, u.EnterpriseURL = c.Email, c.AccountID, c.ProjectID, c.EnterpriseURL
	extra := func(k string, v any) {
		if raw, ok := c.Extra[k]; ok {
			_ = json.Unmarshal(raw, v)
		}
	}
	extra("orgId", &u.OrgID)
	extra("orgName", &u.OrgName)
	var at float64
	extra("authorizedAt", &at)
	u.AuthorizedAt = int64(at)
	return u
}

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
		return &brokerUsage{broker: bc, client: brokerclient.New(bc.URL, bc.Token, nil), pool: pool,
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

// brokerReason is a broker request's failure in a few words: the network
// reason when no answer came, the status and the broker's own message when
// it answered with one, else the client's message.
func brokerReason(err error) string {
	var be *brokerclient.Error
	switch {
	case errors.As(err, &be) && be.Status == 0 && be.Err != nil:
		return httpx.Reason(be.Err)
	case be != nil && be.BrokerMessage() != "":
		return strconv.Itoa(be.Status) + " " + clitext.SafeLine(be.BrokerMessage())
	}
	return err.Error()
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
	return h.Entries, err
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
	settings := config.LoadSettings(dirs.AgentDir, log)
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
