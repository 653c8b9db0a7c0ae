package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const (
	migrateNoBroker = "OMP_AUTH_BROKER_URL must be set (or `auth.broker.url` in config.yml). `migrate` uploads local credentials to a configured broker."
	migrateNoSource = "`omp auth-broker migrate` requires an explicit source. Pass `--from-local` to migrate from the local SQLite store and env vars."
	placeholderKey  = "<authenticated>"
)

func newMigrateCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate --from-local",
		Short: "Upload local credentials to the configured broker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runMigrate(cmd.Context(), migrateOptions{
				fromLocal: f.fromLocal, includeOAuth: f.includeOAuth, includeEnv: f.includeEnv, dryRun: f.dryRun, json: f.json,
			})
		},
	}
	cmd.Flags().BoolVar(&f.fromLocal, "from-local", false, "migrate from the local vault and env vars")
	cmd.Flags().BoolVar(&f.includeOAuth, "include-oauth", false, "include local OAuth credentials")
	cmd.Flags().BoolVar(&f.includeEnv, "include-env", false, "include API keys from environment variables")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would be uploaded")
	return cmd
}

type migrateOptions struct {
	fromLocal, includeOAuth, includeEnv, dryRun, json bool
}

// migrateItem is one planned upload or skip.
type migrateItem struct {
	Source     string `json:"source"`
	Provider   string `json:"provider"`
	Identity   string `json:"identity"`
	Reason     string `json:"reason,omitempty"`
	credential vault.Credential
}

// runMigrate implements `migrate --from-local`.
func (a *app) runMigrate(ctx context.Context, o migrateOptions) error {
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return err
	}
	if bc == nil {
		return errors.New(migrateNoBroker)
	}
	if !o.fromLocal {
		return errors.New(migrateNoSource)
	}
	client := brokerclient.New(bc.URL, bc.Token, nil)
	res, err := client.Snapshot(ctx, nil, 0)
	snap := res.Snapshot
	var be *brokerclient.Error
	switch {
	case err == nil && res.Status == 200 && snap != nil:
	case err == nil || errors.As(err, &be) && be.Status != 0 && be.Status != 200:
		// The broker answered without a snapshot (a wrong token, …): the
		// reference's line.
		return errors.New("Auth broker returned no snapshot")
	default:
		// No answer (unreachable, timed out) or an unreadable one: the
		// same line, with why.
		return fmt.Errorf("Auth broker returned no snapshot: %w", err)
	}
	onBroker := map[string]map[string]bool{}
	mark := func(p, k string) {
		if onBroker[p] == nil {
			onBroker[p] = map[string]bool{}
		}
		onBroker[p][k] = true
	}
	// 18.1.21 index: base identifiers qualified by
	// "|org:<orgId>", or "org:<orgId>" alone; the snapshot carries orgId
	// because the client sends the capabilities header.
	for _, e := range snap.Credentials {
		c := e.Credential
		if c.Type == vault.TypeAPIKey {
			mark(e.Provider, "@api_key")
			continue
		}
		for _, k := range migrateKeys(c) {
			mark(e.Provider, k)
		}
	}

	recs, err := a.localRecords(ctx)
	if err != nil {
		return err
	}
	var plan, skipped []migrateItem
	plannedKey := map[string]bool{}
	for _, r := range recs {
		c := r.Credential
		it := migrateItem{Source: "local-sqlite", Provider: r.Provider, Identity: migrateIdentity(r.Provider, c), credential: c}
		switch {
		case c.Type == vault.TypeAPIKey && c.Key == placeholderKey:
			it.Reason = "placeholder sentinel '<authenticated>' is not a real key"
		case c.Type == vault.TypeOAuth && !o.includeOAuth:
			it.Reason = "OAuth from local SQLite skipped by default (use --include-oauth)"
		case c.Type == vault.TypeAPIKey && onBroker[r.Provider]["@api_key"]:
			it.Reason = "already on broker"
		case c.Type == vault.TypeOAuth && slices.ContainsFunc(migrateKeys(c), func(k string) bool { return onBroker[r.Provider][k] }):
			it.Reason = "already on broker"
		case c.Type == vault.TypeAPIKey && plannedKey[r.Provider]:
			it.Reason = "another local api_key for this provider already planned"
		}
		if it.Reason != "" {
			skipped = append(skipped, it)
			continue
		}
		if c.Type == vault.TypeAPIKey {
			plannedKey[r.Provider] = true
		}
		plan = append(plan, it)
	}
	if o.includeEnv {
		env, _, err := a.setup()
		if err != nil {
			return err
		}
		for _, p := range config.EnvProviders() {
			key := config.EnvAPIKey(env, p)
			if key == "" || key == placeholderKey {
				continue
			}
			it := migrateItem{Source: "env", Provider: p, Identity: "(api key)", credential: vault.Credential{Type: vault.TypeAPIKey, Key: key}}
			switch {
			case onBroker[p]["@api_key"]:
				it.Reason = "already on broker (provider has an api_key)"
			case plannedKey[p]:
				it.Reason = "local SQLite already supplied an api_key for this provider"
			}
			if it.Reason != "" {
				skipped = append(skipped, it)
				continue
			}
			plannedKey[p] = true
			plan = append(plan, it)
		}
	}

	if o.json {
		out := struct {
			DryRun  bool          `json:"dryRun"`
			Plan    []migrateItem `json:"plan"`
			Skipped []migrateItem `json:"skipped"`
		}{o.dryRun, nonNil(plan), nonNil(skipped)}
		if err := writeJSONLine(a.stdout, out); err != nil {
			return err
		}
	} else {
		for _, s := range skipped {
			clitext.Fprintf(a.stdout, "skip [%s] %s %s: %s\n", s.Source, s.Provider, s.Identity, s.Reason)
		}
		if len(plan) == 0 {
			fmt.Fprintln(a.stdout, "Nothing to migrate.")
			return nil
		}
		if o.dryRun {
			fmt.Fprintf(a.stdout, "Dry run — would upload %d credential(s):\n", len(plan))
			for _, p := range plan {
				clitext.Fprintf(a.stdout, "  [%s] %s %s\n", p.Source, p.Provider, p.Identity)
			}
			return nil
		}
	}
	if o.dryRun {
		return nil
	}
	failed := false
	for _, p := range plan {
		_, err := client.Upload(ctx, p.Provider, p.credential)
		switch {
		case err != nil && o.json:
			failed = true
			if werr := writeJSONLine(a.stdout, map[string]string{"error": err.Error(), "provider": p.Provider}); werr != nil {
				return werr
			}
		case err != nil:
			failed = true
			clitext.Fprintf(a.stdout, "failed [%s] %s: %s\n", p.Source, p.Provider, err)
		case !o.json:
			clitext.Fprintf(a.stdout, "uploaded [%s] %s %s\n", p.Source, p.Provider, p.Identity)
		}
	}
	if failed {
		return &exitError{code: 1}
	}
	return nil
}

// localRecords returns the active rows of the local store in id order: the
// reference's plain agent.db when one is there (read only, before any vault
// key is loaded or created), else the Go vault
// (vault.db beside it). A missing store has no rows and is not created.
func (a *app) localRecords(ctx context.Context) (_ []vault.Record, err error) {
	_, dirs, err := a.setup()
	if err != nil {
		return nil, err
	}
	if ref := dirs.AgentDB(); exists(ref) {
		plain, err := sqlite.IsReference(ctx, ref)
		if err != nil {
			return nil, err
		}
		if plain {
			all, err := sqlite.ReadReference(ctx, ref)
			if err != nil {
				return nil, err
			}
			var active []vault.Record
			for _, r := range all {
				if r.Active() {
					active = append(active, r)
				}
			}
			return active, nil
		}
	} else if !exists(dirs.VaultDB()) {
		return nil, nil
	}
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	return st.List(ctx, "")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// migrateKeys are the keys migrate matches an OAuth credential on (exact
// strings, as the reference): email:/accountId:/projectId: plus
// "|org:<orgId>", or org:<orgId> when the credential has no base identity.
func migrateKeys(c vault.Credential) []string {
	org := c.ExtraString(vault.FieldOrgID)
	suffix := ""
	if org != "" {
		suffix = "|org:" + org
	}
	var keys []string
	for _, f := range [...]struct{ k, v string }{{"email:", c.Email}, {"accountId:", c.AccountID}, {"projectId:", c.ProjectID}} {
		if f.v != "" {
			keys = append(keys, f.k+f.v+suffix)
		}
	}
	if len(keys) == 0 && org != "" {
		keys = append(keys, "org:"+org)
	}
	return keys
}

// migrateIdentity is the identity migrate shows for a credential.
func migrateIdentity(provider string, c vault.Credential) string {
	if c.Type == vault.TypeAPIKey {
		return "(api key)"
	}
	for _, s := range []string{c.Email, c.AccountID, c.ProjectID} {
		if s != "" {
			return s
		}
	}
	return "<" + provider + " oauth>"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
