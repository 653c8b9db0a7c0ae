package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gateway"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// gatewayFlags are the flags of `omp auth-gateway`, shared by its actions.
type gatewayFlags struct {
	json       bool
	bind       string
	regenerate bool
	noAuth     bool
	optIn      bool
	strict     bool
	noCache    bool
	// The serve limits: the no-auth allow-lists and the in-flight cap.
	allowedHosts   []string
	allowedOrigins []string
	maxInFlight    int64
}

func newAuthGatewayCmd(a *app) *cobra.Command {
	f := &gatewayFlags{}
	actions := []*cobra.Command{
		newGatewayServeCmd(a, f),
		newGatewayTokenCmd(a, f),
		newGatewayStatusCmd(a, f),
		newGatewayCheckCmd(a, f),
	}
	return newActionGroup("auth-gateway", "Run or inspect the auth gateway (a broker client serving model APIs)", &f.json, actions)
}

func newGatewayServeCmd(a *app, f *gatewayFlags) *cobra.Command {
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (needs OMP_AUTH_BROKER_URL)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, dirs, err := a.setup()
			if err != nil {
				return err
			}
			o, err := logs.options(env)
			if err != nil {
				return err
			}
			// stdout carries exactly the reference's startup lines; logs go
			// to stderr, off the request path.
			log, warn, logw := o.Buffered(a.stderr)
			defer logw.Close()
			cfg, err := gateway.FromEnv(cmd.Context(), env, dirs, log, warn)
			if err != nil {
				return err
			}
			cfg.Bind, cfg.NoAuth, cfg.AllowNonLoopbackNoAuth = f.bind, f.noAuth, f.optIn
			cfg.OverrideLimits(f.allowedHosts, f.allowedOrigins, f.maxInFlight)
			if f.noCache {
				cfg.SnapshotCache = nil
			}
			cfg.Out = a.stdout
			return gateway.Serve(cmd.Context(), cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.bind, "bind", "b", config.DefaultGatewayBind, "listen address, host:port or port")
	fl.BoolVar(&f.noAuth, "no-auth", false, "disable the bearer check (loopback-only use)")
	fl.BoolVar(&f.optIn, config.AllowNonLoopbackNoAuthFlag[2:], false, "allow --no-auth on a non-loopback bind (any client that reaches it can use every credential)")
	fl.StringSliceVar(&f.allowedHosts, "allowed-host", nil, "with --no-auth, also answer this Host name besides localhost and IP addresses (repeatable; default $OMP_AUTH_GATEWAY_ALLOWED_HOSTS)")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origin", nil, "with --no-auth, also answer browser requests from this origin, e.g. http://localhost:3000 (repeatable; default $OMP_AUTH_GATEWAY_ALLOWED_ORIGINS)")
	fl.Int64Var(&f.maxInFlight, "max-inflight-bytes", 0, "cap on request body bytes held at once, past it 503 (0: $OMP_AUTH_GATEWAY_MAX_INFLIGHT_BYTES or 256 MiB; negative: no cap)")
	fl.BoolVar(&f.noCache, gateway.NoSnapshotCacheFlag[2:], false, gateway.NoSnapshotCacheUsage)
	logs.add(cmd)
	return cmd
}

func newGatewayCheckCmd(a *app, f *gatewayFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Probe the broker's credentials as the gateway would serve them (--strict: also a tiny chat completion each)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, dirs, err := a.setup()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			code, err := checkGateway(cmd.Context(), env, dirs, log, a.warnLogger(), a.stdout, f.strict, f.json)
			switch {
			case code != 0 && err != nil:
				return &exitError{code: code, msg: err.Error()}
			case code != 0:
				return &exitError{code: code}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&f.strict, "strict", false, "also send a tiny chat completion per credential (uses quota)")
	return cmd
}

func newGatewayTokenCmd(a *app, f *gatewayFlags) *cobra.Command {
	return newTokenFileCmd(a, "Print (or --regenerate) the gateway bearer token", config.Dirs.GatewayTokenPath, &f.regenerate, &f.json)
}

func newGatewayStatusCmd(a *app, f *gatewayFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Check the gateway token and the upstream broker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runGatewayStatus(cmd.Context(), f.json)
		},
	}
}

// gatewayStatus is the `status --json` line; the field
// order is the reference's.
type gatewayStatus struct {
	Ready               bool    `json:"ready"`
	Reason              *string `json:"reason"`
	TokenFile           string  `json:"tokenFile"`
	TokenPresent        bool    `json:"tokenPresent"`
	Broker              *string `json:"broker"`
	BrokerConfigured    bool    `json:"brokerConfigured"`
	BrokerAuthenticated bool    `json:"brokerAuthenticated"`
	CredentialCount     *int    `json:"credentialCount,omitempty"`
	Error               *string `json:"error,omitempty"`
}

// runGatewayStatus implements `status`: it reads the
// gateway token file (never creates it), resolves the broker and fetches a
// full snapshot. Exit 1 unless ready.
func (a *app) runGatewayStatus(ctx context.Context, asJSON bool) error {
	_, dirs, err := a.setup()
	if err != nil {
		return err
	}
	st := gatewayStatus{TokenFile: dirs.GatewayTokenPath()}
	if tok, _ := config.ReadToken(st.TokenFile); tok != "" {
		st.TokenPresent = true
	}
	bc, err := a.brokerConfig(ctx)
	var missing *config.MissingTokenError
	switch {
	case errors.As(err, &missing):
		// A URL without a token is a broker that cannot authenticate.
		bc = &config.Broker{URL: missing.URL}
	case err != nil:
		return err
	}
	var text []string
	switch {
	case bc == nil:
		st.Reason = ptr("not_configured")
		text = append(text, "No broker configured. Set OMP_AUTH_BROKER_URL.")
	default:
		st.Broker, st.BrokerConfigured = ptr(bc.URL), true
		n, ferr := brokerCredentialCount(ctx, bc, err)
		if ferr != nil {
			st.Reason, st.Error = ptr("broker_unavailable"), ptr(ferr.Error())
			text = append(text, fmt.Sprintf("FAILED upstream broker: %s: %s", bc.URL, ferr))
			break
		}
		st.Ready, st.BrokerAuthenticated, st.CredentialCount = st.TokenPresent, true, &n
		if !st.TokenPresent {
			st.Reason = ptr("token_missing")
		}
		state := "ready"
		if !st.Ready {
			state = "not ready"
		}
		text = append(text, fmt.Sprintf("%s upstream broker: %s (%d credential%s)", state, bc.URL, n, plural(n)))
	}
	if asJSON {
		if err := writeJSONLine(a.stdout, st); err != nil {
			return err
		}
	} else {
		presence := "missing"
		if st.TokenPresent {
			presence = "present"
		}
		text = append(text, fmt.Sprintf("token: %s at %s", presence, st.TokenFile))
		if !st.TokenPresent && st.BrokerAuthenticated {
			text = append(text, "Run `omp auth-gateway token` or `omp auth-gateway serve` to create a bearer token.")
		}
		fmt.Fprintln(a.stdout, clitext.Safe(strings.Join(text, "\n")))
	}
	if !st.Ready {
		return &exitError{code: 1}
	}
	return nil
}

// brokerCredentialCount fetches a full snapshot and counts its
// credentials; resolveErr (a missing broker token) is returned as is.
func brokerCredentialCount(ctx context.Context, bc *config.Broker, resolveErr error) (int, error) {
	if resolveErr != nil {
		return 0, resolveErr
	}
	res, err := brokerclient.New(bc.URL, bc.Token, nil).Snapshot(ctx, nil, 0)
	if err != nil {
		return 0, err
	}
	if res.Snapshot == nil {
		return 0, errors.New("auth broker answered without a snapshot")
	}
	return len(res.Snapshot.Credentials), nil
}

func ptr[T any](v T) *T { return &v }
