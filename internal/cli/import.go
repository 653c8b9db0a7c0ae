package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/cliproxy"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const importUsage = "Usage: omp auth-broker import <file|dir> [--provider=<id>] [--include-disabled] [--dry-run]"

func newImportCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import <file|dir>",
		Short: "Import CLIProxyAPI auth files or a reference agent.db",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New(importUsage)
			}
			return a.runImport(cmd.Context(), args[0], importOptions{
				provider: f.provider, includeDisabled: f.includeDisabled, dryRun: f.dryRun, json: f.json,
			})
		},
	}
	cmd.Flags().StringVar(&f.provider, "provider", "", "provider id for every file")
	cmd.Flags().BoolVar(&f.includeDisabled, "include-disabled", false, "import files marked disabled")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would be imported")
	return cmd
}

type importOptions struct {
	provider        string
	includeDisabled bool
	dryRun          bool
	json            bool
	now             func() time.Time
}

// runImport implements `import`: CLIProxyAPI files (or a
// reference agent.db) go to the configured broker, else to the local vault.
func (a *app) runImport(ctx context.Context, path string, o importOptions) error {
	if o.now == nil {
		o.now = time.Now
	}
	now := o.now()
	_, dirs, err := a.setup()
	if err != nil {
		return err
	}
	// "~" is the user's home of this invocation (HOME in a.environ), not
	// the test runner's or the service manager's.
	abs, err := cliproxy.ResolvePath(path, dirs.Home)
	if err != nil {
		return err
	}
	var entries []cliproxy.Entry
	var skips []cliproxy.Skip
	var refRecords []vault.Record // set when the source is a reference agent.db
	if isSQLiteFile(abs) {
		refRecords, err = sqlite.ReadReference(ctx, abs)
		if err != nil {
			return err // names the file already
		}
		for _, r := range refRecords {
			if !r.Active() && !o.includeDisabled {
				continue
			}
			provider := r.Provider
			if o.provider != "" {
				provider = o.provider
			}
			entries = append(entries, cliproxy.Entry{Provider: provider, Credential: r.Credential, Disabled: !r.Active(), File: abs})
		}
	} else {
		entries, skips, err = cliproxy.Scan(abs, cliproxy.Options{Provider: o.provider, IncludeDisabled: o.includeDisabled, Now: o.now, Home: dirs.Home})
		if err != nil {
			return err
		}
	}

	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return err
	}

	if o.json {
		type planItem struct {
			Provider  string  `json:"provider"`
			Email     *string `json:"email"`
			AccountID *string `json:"accountId"`
			ExpiresAt *int64  `json:"expiresAt"`
			Disabled  bool    `json:"disabled"`
			File      string  `json:"file"`
		}
		type importedItem struct {
			Provider string  `json:"provider"`
			Email    *string `json:"email"`
			File     string  `json:"file"`
		}
		type skipItem struct {
			File   string `json:"file"`
			Reason string `json:"reason"`
		}
		out := struct {
			DryRun   bool           `json:"dryRun"`
			Imported []importedItem `json:"imported"`
			Plan     []planItem     `json:"plan"`
			Skipped  []skipItem     `json:"skipped"`
		}{DryRun: o.dryRun, Imported: []importedItem{}, Plan: []planItem{}, Skipped: []skipItem{}}
		for _, s := range skips {
			out.Skipped = append(out.Skipped, skipItem{s.File, s.Reason})
		}
		var failures []string
		for _, e := range entries {
			var exp *int64
			if e.Credential.IsOAuth() {
				exp = &e.Credential.Expires
			}
			out.Plan = append(out.Plan, planItem{e.Provider, nullable(e.Credential.Email), nullable(e.Credential.AccountID), exp, e.Disabled, e.File})
		}
		if !o.dryRun {
			done, errs := a.storeImported(ctx, bc, entries, refRecords, o)
			for i, e := range done {
				if errs[i] != nil {
					b, _ := jsonLine(map[string]string{"error": errs[i].Error(), "file": e.File})
					failures = append(failures, b)
					continue
				}
				out.Imported = append(out.Imported, importedItem{e.Provider, nullable(e.Credential.Email), e.File})
			}
		}
		if err := writeJSONLine(a.stdout, out); err != nil {
			return err
		}
		for _, l := range failures {
			fmt.Fprintln(a.stdout, l)
		}
		if len(failures) > 0 {
			return &exitError{code: 1}
		}
		return nil
	}

	for _, s := range skips {
		clitext.Fprintf(a.stdout, "skip %s: %s\n", s.File, s.Reason)
	}
	if len(entries) == 0 {
		clitext.Fprintf(a.stdout, "No importable credentials in %s.\n", abs)
		return nil
	}
	if o.dryRun {
		fmt.Fprintf(a.stdout, "Dry run — would import %d credential(s):\n", len(entries))
		for _, e := range entries {
			clitext.Fprintf(a.stdout, "  %s\n", describeEntry(e, now))
		}
		return nil
	}
	done, errs := a.storeImported(ctx, bc, entries, refRecords, o)
	failed := false
	for i, e := range done {
		desc := describeEntry(e, now)
		switch {
		case errs[i] != nil:
			failed = true
			clitext.Fprintf(a.stdout, "failed %s: %s\n", desc, errs[i])
		case bc != nil:
			clitext.Fprintf(a.stdout, "uploaded %s → %s\n", desc, bc.URL)
		default:
			clitext.Fprintf(a.stdout, "imported %s\n", desc)
		}
	}
	if failed {
		return &exitError{code: 1}
	}
	return nil
}

// storeImported uploads entries to the broker (bc != nil) or writes them to
// the local vault. It returns the entries with one error slot each. A
// reference agent.db imported locally keeps its row ids and causes.
func (a *app) storeImported(ctx context.Context, bc *config.Broker, entries []cliproxy.Entry, ref []vault.Record, o importOptions) ([]cliproxy.Entry, []error) {
	errs := make([]error, len(entries))
	if bc != nil {
		client := brokerclient.New(bc.URL, bc.Token, nil)
		for i, e := range entries {
			_, errs[i] = client.Upload(ctx, e.Provider, e.Credential)
		}
		return entries, errs
	}
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return entries, errs
	}
	defer st.Close()
	if ref != nil && o.provider == "" {
		var keep []vault.Record
		for _, r := range ref {
			if r.Active() || o.includeDisabled {
				keep = append(keep, r)
			}
		}
		if _, err := st.ImportRecords(ctx, keep); err != nil {
			for i := range errs {
				errs[i] = err
			}
		}
		return entries, errs
	}
	for i, e := range entries {
		_, errs[i] = st.Upsert(ctx, e.Provider, e.Credential)
	}
	return entries, errs
}

// isSQLiteFile reports whether path is a regular file with the SQLite header.
func isSQLiteFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	hdr := make([]byte, 16)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return false
	}
	return bytes.Equal(hdr, []byte("SQLite format 3\x00"))
}

// describeEntry is cliproxy.Describe, except that API keys (rows of a
// reference agent.db) never expire and so are never marked [expired].
func describeEntry(e cliproxy.Entry, now time.Time) string {
	if !e.Credential.IsOAuth() {
		now = time.Time{} // before every expiry, including an API key's 0
	}
	return cliproxy.Describe(e, now)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func jsonLine(v any) (string, error) {
	var b bytes.Buffer
	err := writeJSONLine(&b, v)
	return strings.TrimSuffix(b.String(), "\n"), err
}
