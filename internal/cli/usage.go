package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/cli/usageview"
	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
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
	policies, err := a.accountPolicies()
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(a.stdout, usageview.Render(usageview.Breakdown(reports, listed, gone, now, red, policies), a.colour()))
	return err
}

// accountPolicies are the account policies of config.yml, which the text
// shows per account (priority, reserve, whether it is inside it).
func (a *app) accountPolicies() (*vaultpick.Policies, error) {
	_, dirs, err := a.setup()
	if err != nil {
		return nil, err
	}
	settings, err := config.LoadSettings(dirs.AgentDir, a.warnLogger())
	if err != nil {
		return nil, err
	}
	return settings.AccountPolicies()
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
