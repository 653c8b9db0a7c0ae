package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/llm"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	vaultpick "github.com/ompgo/omp/pkg/vault/pick"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// brokerReadyTimeout bounds the wait for the broker's first snapshot.
const brokerReadyTimeout = 15 * time.Second

// agentBroker is where the agent's stored credentials come from: in broker
// mode the remote credential store fed by the broker, without a broker the
// local vault (agentvault.go); the picker chooses a provider's credential
// for the session from either.
type agentBroker struct {
	store    *remote.Store // broker mode; nil for the local vault
	picker   *vaultpick.Picker
	vault    string           // the local vault's path; "" in broker mode
	reporter *remote.Reporter // observed usage; nil without an install id
	// who the agent's burn is attributed to: <config dir>/install-id, the
	// host name, OMP_APP_NAME or "omp".
	installID, hostname, app string
	// served is the credential id last handed out per provider: the
	// account a settled turn of that provider ran on (an agent process
	// runs one session), named in its observed usage.
	served sync.Map
	stop   func() // flushes observed usage, cancels the sync and waits for it
}

// connectBroker starts the remote store when a broker is configured and
// waits for its first snapshot. It returns nil when none is configured; a
// URL without a token is a hard error. A broker that rejects the token or
// refuses every connection fails at once: neither gets better by waiting.
// Other failures of the first fetch are retried until brokerReadyTimeout,
// with a line on progress saying so. The account policies of config.yml
// govern the picker; an invalid policy fails before the broker is asked.
func connectBroker(ctx context.Context, env *config.Env, dirs config.Dirs, settings *config.Settings, resolver *config.Resolver, progress io.Writer) (*agentBroker, error) {
	b, err := config.ResolveBroker(ctx, env, dirs, settings, resolver)
	if err != nil || b == nil {
		return nil, err
	}
	pool, err := remote.LoadPool(env.Get(remote.EnvAccountPoolFile))
	if err != nil {
		return nil, err // an unusable pool file fails before the first snapshot request
	}
	policies, err := settings.AccountPolicies()
	if err != nil {
		return nil, err
	}
	var warn *slog.Logger
	if resolver != nil {
		warn = resolver.Logger
	}
	store := remote.New(remote.Options{Client: brokerclient.New(b.URL, b.Token, nil), Pool: pool,
		Cache: snapshotCache(env, dirs, b, warn)})
	deadline := time.Now().Add(brokerReadyTimeout)
	bctx, bcancel := context.WithDeadline(ctx, deadline)
	_, err = store.Boot(bctx)
	bcancel()
	if err != nil {
		if _, ok := brokerAuthFailed(err); ok {
			return nil, brokerError(b, dirs, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case brokerUnreachable(err):
			return nil, unreachableError(b, err)
		case !time.Now().Before(deadline):
			return nil, fmt.Errorf("auth broker %s: no snapshot after %v: timeout; %s", b.URL, brokerReadyTimeout, brokerStartHint)
		}
		// The broker's own text may hold terminal escapes: shown as visible text.
		fmt.Fprintf(progress, "auth broker %s: %s; retrying for up to %v\n", clitext.SafeLine(b.URL),
			clitext.Safe(brokerError(b, dirs, err).Error()), time.Until(deadline).Round(time.Second))
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = store.Run(sctx)
	}()
	ab := &agentBroker{store: store, picker: &vaultpick.Picker{Source: store, Policies: policies}, app: config.AppName(env)}
	if id, err := config.InstallID(dirs.InstallIDPath()); err == nil {
		ab.installID, ab.hostname = id, config.Hostname()
		ab.reporter = &remote.Reporter{Client: store.Client()}
	}
	ab.stop = func() {
		if ab.reporter != nil {
			// The final batch of a short run: bounded, never blocks exit long.
			fctx, fcancel := context.WithTimeout(context.Background(), 3*time.Second)
			ab.reporter.Close(fctx)
			fcancel()
		}
		store.WaitPosts()
		cancel()
		<-done
	}
	select {
	case <-store.Ready():
		return ab, nil
	case <-ctx.Done():
		ab.stop()
		return nil, ctx.Err()
	case <-time.After(time.Until(deadline)):
		st := store.Status()
		ab.stop()
		return nil, fmt.Errorf("auth broker %s: no snapshot after %v: %s", b.URL, brokerReadyTimeout, st.LastError)
	}
}

// snapshotCache is the encrypted snapshot cache every broker client boots
// from: OMP_AUTH_BROKER_SNAPSHOT_CACHE, else <config-dir>/cache/auth-broker-snapshot.enc
// (the XDG cache root when the XDG rule applies), sealed for b's token and
// URL, fresh for OMP_AUTH_BROKER_SNAPSHOT_TTL_MS (default 1 h; 0 disables
// it). An invalid TTL is warned about on warn.
func snapshotCache(env *config.Env, dirs config.Dirs, b *config.Broker, warn *slog.Logger) *remote.Cache {
	return &remote.Cache{Path: dirs.SnapshotCachePath(env), Token: b.Token, URL: b.URL, TTL: config.SnapshotTTL(env, warn)}
}

// has reports whether the broker (or local vault) holds a credential for
// provider.
func (b *agentBroker) has(ctx context.Context, provider string) bool {
	es, err := b.picker.Source.List(ctx, provider)
	return err == nil && len(es) > 0
}

// credential picks the session's credential for provider, refreshed
// through the broker when its access token is about to expire.
func (b *agentBroker) credential(ctx context.Context, provider, sessionID, modelID string) (llm.Credential, bool, error) {
	e, err := b.picker.Pick(ctx, provider, sessionID, vaultpick.Options{ModelID: modelID})
	if vault.ErrorCode(err) == vault.ENOTFOUND {
		return llm.Credential{}, false, nil
	}
	if err != nil {
		return llm.Credential{}, false, err
	}
	if b.store != nil {
		if e, err = b.store.Prepare(ctx, e.ID); err != nil {
			return llm.Credential{}, false, err
		}
	}
	b.served.Store(provider, e.ID)
	return vaultpick.LLMCredential(e), true, nil
}

// refresh picks the session's credential for provider again and refreshes
// it through the broker now, whatever its expiry (a 401/403 upstream).
func (b *agentBroker) refresh(ctx context.Context, provider, sessionID, modelID string) (llm.Credential, bool, error) {
	e, err := b.picker.Pick(ctx, provider, sessionID, vaultpick.Options{ModelID: modelID})
	if vault.ErrorCode(err) == vault.ENOTFOUND {
		return llm.Credential{}, false, nil
	}
	if err != nil {
		return llm.Credential{}, false, err
	}
	if e, err = b.picker.Source.Refresh(ctx, e.ID); err != nil {
		return llm.Credential{}, false, err
	}
	b.served.Store(provider, e.ID)
	return vaultpick.LLMCredential(e), true, nil
}

// observeTurn records the token burn of one settled assistant turn (the
// turn_end event's message): provider, model and usage as
// the session file stores them. Zero-token turns are skipped.
func (b *agentBroker) observeTurn(raw json.RawMessage) {
	if b == nil || b.reporter == nil || len(raw) == 0 {
		return
	}
	var m struct {
		Role     string `json:"role"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
		Usage    *struct {
			Input, Output, CacheRead, CacheWrite int64
			Cost                                 struct{ Total float64 }
		} `json:"usage"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Role != "assistant" || m.Usage == nil {
		return
	}
	cred, _ := b.served.Load(m.Provider)
	id, _ := cred.(int64)
	b.reporter.Record(remote.Observation{InstallID: b.installID, Hostname: b.hostname, App: b.app,
		Provider: m.Provider, Model: m.Model, CredentialID: id, InputTokens: m.Usage.Input, OutputTokens: m.Usage.Output,
		CacheReadTokens: m.Usage.CacheRead, CacheWriteTokens: m.Usage.CacheWrite, CostUsd: m.Usage.Cost.Total})
}
