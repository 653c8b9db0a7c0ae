package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault"
)

// Named client tokens: `omp auth-broker token create|list|revoke`. They run
// on the broker host against the local vault; a running broker picks the
// change up within its token poll (250 ms) and a revoked token's open
// streams end then.

func newTokenCreateCmd(a *app, f *brokerFlags) *cobra.Command {
	var scope string
	cmd := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a named broker token (shown once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runTokenCreate(cmd.Context(), args[0], scope, f.json)
		},
	}
	cmd.Flags().StringVar(&scope, "scope", vault.ScopeClient, "client (fleet member) or admin (everything the shared bearer may)")
	return cmd
}

func newTokenListCmd(a *app, f *brokerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the named broker tokens (names and scopes, never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runTokenList(cmd.Context(), f.json)
		},
	}
}

func newTokenRevokeCmd(a *app, f *brokerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <name>",
		Short: "Revoke a named broker token (its open streams end)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runTokenRevoke(cmd.Context(), args[0], f.json)
		},
	}
}

// tokenJSON is one token in --json output; Token only at creation.
type tokenJSON struct {
	Name      string `json:"name"`
	Scope     string `json:"scope"`
	CreatedAt string `json:"createdAt"`
	Token     string `json:"token,omitempty"`
}

func toTokenJSON(t vault.ClientToken) tokenJSON {
	return tokenJSON{Name: t.Name, Scope: t.Scope, CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339)}
}

// runTokenCreate stores a fresh token's digest and prints the token: the
// only time it is shown. Text mode prints the bare token on stdout (for
// `TOKEN=$(omp auth-broker token create gw-a)`) and a note on stderr.
func (a *app) runTokenCreate(ctx context.Context, name, scope string, asJSON bool) error {
	t := vault.ClientToken{Name: name, Scope: scope, CreatedAt: a.now()}
	if err := t.Validate(); err != nil { // before opening the vault
		return err
	}
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	tok, digest := vault.NewClientToken()
	t.Digest = digest
	if err := st.CreateToken(ctx, t); err != nil {
		return err
	}
	if asJSON {
		j := toTokenJSON(t)
		j.Token = tok
		return writeJSONLine(a.stdout, j)
	}
	fmt.Fprintf(a.stderr, "Created %s token %q. It is shown only this once; give it to the client as its broker token.\n", t.Scope, t.Name)
	_, err = fmt.Fprintln(a.stdout, tok)
	return err
}

func (a *app) runTokenList(ctx context.Context, asJSON bool) error {
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	toks, err := st.ClientTokens(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]tokenJSON, 0, len(toks))
		for _, t := range toks {
			out = append(out, toTokenJSON(t))
		}
		return writeJSONLine(a.stdout, out)
	}
	return writeTokenTable(a.stdout, toks)
}

func writeTokenTable(w io.Writer, toks []vault.ClientToken) error {
	if len(toks) == 0 {
		_, err := fmt.Fprintln(w, "No client tokens. Create one with: omp auth-broker token create <name>")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPE\tCREATED")
	for _, t := range toks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", clitext.SafeLine(t.Name), clitext.SafeLine(t.Scope), t.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func (a *app) runTokenRevoke(ctx context.Context, name string, asJSON bool) error {
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RevokeToken(ctx, name); err != nil {
		return err
	}
	if asJSON {
		return writeJSONLine(a.stdout, map[string]any{"revoked": name})
	}
	_, err = fmt.Fprintf(a.stdout, "Revoked token %s\n", clitext.SafeLine(name))
	return err
}
