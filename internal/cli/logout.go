package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/pkg/vault"
)

func newLogoutCmd(a *app, f *brokerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logout [<provider>]",
		Short: "Remove a provider's credentials from the local vault",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			provider := f.provider
			if len(args) == 1 {
				provider = args[0]
			}
			return a.runLogout(cmd.Context(), provider)
		},
	}
	cmd.Flags().StringVar(&f.provider, "provider", "", "provider id")
	return cmd
}

// runLogout soft-deletes every active row of a provider.
func (a *app) runLogout(ctx context.Context, provider string) error {
	st, _, err := a.openLocalVault(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if provider == "" {
		recs, err := st.List(ctx, "")
		if err != nil {
			return err
		}
		var providers []string
		seen := map[string]bool{}
		for _, r := range recs {
			if !seen[r.Provider] {
				seen[r.Provider] = true
				providers = append(providers, r.Provider)
			}
		}
		if len(providers) == 0 {
			fmt.Fprintln(a.stdout, "No credentials stored.")
			return nil
		}
		if provider, err = pick(a.stdin, a.stdout, "Select a provider to logout:", providers); err != nil {
			return err
		}
	}
	if _, err := st.DisableProvider(ctx, provider, vault.CauseLoggedOut); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Logged out of %s\n", provider)
	return nil
}
