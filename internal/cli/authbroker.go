package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// brokerFlags are the flags of `omp auth-broker`, shared by its actions.
type brokerFlags struct {
	json            bool
	bind            string
	regenerate      bool
	provider        string
	includeDisabled bool
	fromLocal       bool
	includeEnv      bool
	includeOAuth    bool
	dryRun          bool
	via             string
	vaultKeyFile    string
}

func newAuthBrokerCmd(a *app) *cobra.Command {
	f := &brokerFlags{}
	actions := []*cobra.Command{
		newServeCmd(a, f),
		newTokenCmd(a, f),
		newLoginCmd(a, f),
		newLogoutCmd(a, f),
		newImportCmd(a, f),
		newMigrateCmd(a, f),
		newStatusCmd(a, f),
		newListCmd(a, f),
		newRekeyCmd(a, f),
		newBackupCmd(a, f), newRestoreCmd(a, f),
	}
	return newActionGroup("auth-broker", "Run or talk to the credential broker", &f.json, actions)
}

// newActionGroup is the parent of a set of actions (auth-broker,
// auth-gateway): no action prints the help (exit 0); an unknown one is a
// usage error with the reference's text.
// --json is shared by every action.
func newActionGroup(use, short string, asJSON *bool, actions []*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			names := make([]string, len(actions))
			for i, c := range actions {
				names[i] = c.Name()
			}
			return fmt.Errorf("Expected action to be one of: %s; got %q", strings.Join(names, ", "), args[0])
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().BoolVar(asJSON, "json", false, "print JSON")
	cmd.AddCommand(actions...)
	return cmd
}

// newTokenCmd is `auth-broker token`: alone it prints (or regenerates) the
// shared bearer; its subcommands manage named client tokens (clienttokens.go).
func newTokenCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := newTokenFileCmd(a, "Print (or --regenerate) the shared broker bearer token; create, list or revoke named tokens", config.Dirs.BrokerTokenPath, &f.regenerate, &f.json)
	cmd.AddCommand(newTokenCreateCmd(a, f), newTokenListCmd(a, f), newTokenRevokeCmd(a, f))
	return cmd
}

// newTokenFileCmd is the `token` action of auth-broker and auth-gateway:
// print (or regenerate) the bearer token in the file path(dirs) names.
func newTokenFileCmd(a *app, short string, path func(config.Dirs) string, regenerate, asJSON *bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, dirs, err := a.setup()
			if err != nil {
				return err
			}
			return runToken(a.stdout, path(dirs), *regenerate, *asJSON)
		},
	}
	cmd.Flags().BoolVar(regenerate, "regenerate", false, "write a fresh token")
	return cmd
}

// runToken prints the token at path, creating it if absent.
func runToken(w io.Writer, path string, regenerate, asJSON bool) error {
	var tok string
	var err error
	if regenerate {
		tok, err = config.RegenerateToken(path)
	} else {
		tok, _, err = config.EnsureToken(path)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSONLine(w, struct {
			Token string `json:"token"`
			Path  string `json:"path"`
		}{tok, path})
	}
	_, err = fmt.Fprintln(w, tok)
	return err
}

func newStatusCmd(a *app, f *brokerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Health-ping the configured broker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runStatus(cmd.Context(), f.json)
		},
	}
}

// runStatus implements `auth-broker status`.
func (a *app) runStatus(ctx context.Context, asJSON bool) error {
	bc, err := a.brokerConfig(ctx)
	if err != nil {
		return err
	}
	if bc == nil {
		if asJSON {
			return writeJSONLine(a.stdout, map[string]any{"ok": false, "reason": "not_configured"})
		}
		fmt.Fprintln(a.stdout, "No auth-broker configured (set OMP_AUTH_BROKER_URL to enable).")
		return nil
	}
	_, dirs, err := a.setup()
	if err != nil {
		return err
	}
	source := tokenSource(bc, dirs)
	// healthz is unauthenticated: the snapshot proves the token too.
	client := brokerclient.New(bc.URL, bc.Token, nil)
	h, err := client.Healthz(ctx)
	if err == nil {
		_, err = client.Snapshot(ctx, nil, 0)
	}
	if err != nil {
		err = brokerError(bc, dirs, err)
		if asJSON {
			_ = writeJSONLine(a.stdout, struct {
				OK          bool   `json:"ok"`
				URL         string `json:"url"`
				Error       string `json:"error"`
				TokenSource string `json:"tokenSource"`
			}{false, bc.URL, err.Error(), source})
		} else {
			fmt.Fprintf(a.stdout, "FAILED %s: %s\n", clitext.SafeLine(bc.URL), clitext.Safe(err.Error()))
		}
		return &exitError{code: 1}
	}
	if asJSON {
		return writeJSONLine(a.stdout, struct {
			URL         string `json:"url"`
			OK          bool   `json:"ok"`
			Version     string `json:"version,omitempty"`
			TokenSource string `json:"tokenSource"`
		}{bc.URL, true, h.Version, source})
	}
	v := h.Version
	if v == "" {
		v = "unknown"
	}
	fmt.Fprintf(a.stdout, "OK %s (version=%s)\n", clitext.SafeLine(bc.URL), clitext.SafeLine(v))
	fmt.Fprintf(a.stdout, "token from %s: accepted\n", clitext.SafeLine(source))
	return nil
}

// brokerConfig resolves the client's broker URL and token;
// nil when no broker is configured.
func (a *app) brokerConfig(ctx context.Context) (*config.Broker, error) {
	env, dirs, err := a.setup()
	if err != nil {
		return nil, err
	}
	log := a.warnLogger()
	settings, err := config.LoadSettings(dirs.AgentDir, log)
	if err != nil {
		return nil, err
	}
	return config.ResolveBroker(ctx, env, dirs, settings, &config.Resolver{Env: env, Logger: log})
}

func newListCmd(a *app, f *brokerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the providers that can log in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := a.oauthRegistry()
			if err != nil {
				return err
			}
			return runList(a.stdout, loginProviders(reg), f.json)
		},
	}
}

// providerName is an id/name pair of the `list` output.
type providerName struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// runList implements `list`.
func runList(w io.Writer, ps []providerName, asJSON bool) error {
	if asJSON {
		if ps == nil {
			ps = []providerName{}
		}
		return writeJSONLine(w, ps)
	}
	fmt.Fprintln(w, "Available providers:")
	fmt.Fprintln(w)
	for _, p := range ps {
		fmt.Fprintf(w, "  %-20s %s\n", clitext.SafeLine(p.ID), clitext.SafeLine(p.Name))
	}
	return nil
}

// Short names for the clitext output helpers.
var (
	writeJSONLine = clitext.JSONLine
	plural        = clitext.Plural
)
