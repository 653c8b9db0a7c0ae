package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// newAgentLoginCmd is `omp login [<provider>]`: the agent's own login. It
// runs the same flows as `omp auth-broker login` and stores the credential
// the same way: on the configured broker, else in the local vault (which a
// broker on this host serves); the agent reads either.
func newAgentLoginCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "login [<provider>]",
		Short: "Log in to a model provider (terminal counterpart of /login)",
		Long: "Log in to a model provider (terminal counterpart of /login).\n\n" +
			"The credential goes to the configured auth broker, else to the local vault (served by `omp auth-broker serve`).\n" +
			"The agent uses it from either: without a broker it reads the local vault and refreshes its OAuth tokens\n" +
			"itself, unless a broker serves that vault (then set OMP_AUTH_BROKER_URL to use the broker).\n" +
			"Omit the provider to pick one interactively.",
		Example: "  omp login\n  omp login anthropic",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			provider := ""
			if len(args) == 1 {
				provider = args[0]
			}
			if err := a.runAgentLogin(cmd.Context(), provider); err != nil {
				return &exitError{code: 1, msg: "Login failed: " + err.Error()}
			}
			return nil
		},
	}
}

// runAgentLogin implements `omp login`.
func (a *app) runAgentLogin(ctx context.Context, provider string) error {
	reg, err := a.oauthRegistry()
	if err != nil {
		return err
	}
	providers := loginProviders(reg)
	if provider, err = a.chooseProvider(providers, provider); err != nil {
		return err
	}
	i := slices.IndexFunc(providers, func(p providerName) bool { return p.ID == provider })
	if i < 0 {
		return fmt.Errorf("Unknown OAuth provider '%s'. Run `omp login` to pick one.", provider)
	}
	name := providers[i].Name
	cred, sink, err := a.loginAndStore(ctx, reg, provider)
	if errors.Is(err, oauth.ErrNoKeyEntered) {
		fmt.Fprintf(a.stdout, "No credentials were stored for %s.\n", clitext.SafeLine(name))
		return nil
	}
	if err != nil {
		return err
	}
	who := ""
	if id := loginIdentity(cred); id != "" {
		who = " as " + id
	}
	fmt.Fprintf(a.stdout, "\nLogged in to %s%s\n", clitext.SafeLine(name), clitext.SafeLine(who))
	if sink.broker {
		fmt.Fprintf(a.stdout, "Credentials saved to auth broker %s\n", sink.dest)
	} else {
		fmt.Fprintf(a.stdout, "Credentials saved to %s\n", sink.dest)
	}
	return nil
}

// loginIdentity names whom an OAuth login signed in: the email (else the
// account id), with the organisation in parentheses; "" for an API key.
func loginIdentity(c vault.Credential) string {
	if !c.IsOAuth() {
		return ""
	}
	base := c.Email
	if base == "" {
		base = c.AccountID
	}
	org := c.ExtraString("orgName")
	if org == "" {
		org = c.OrgID()
	}
	switch {
	case base != "" && org != "":
		return base + " (" + org + ")"
	case base != "":
		return base
	}
	return org
}
