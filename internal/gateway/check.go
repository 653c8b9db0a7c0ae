package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ompgo/omp/pkg/proxy"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// MsgCheckNoBroker is `omp auth-gateway check`'s text when no broker is
// configured.
const MsgCheckNoBroker = "`omp auth-gateway check` requires OMP_AUTH_BROKER_URL (or `auth.broker.url`/`auth.broker.token` in config.yml). It probes the same credentials the gateway would serve."

// CheckReadyTimeout bounds how long Check waits for the remote store's
// first snapshot after the broker answered the initial one.
const CheckReadyTimeout = 30 * time.Second

// ErrCheckNoBroker is Check's error when no broker is configured.
var ErrCheckNoBroker error = exactError(MsgCheckNoBroker)

// Check runs `omp auth-gateway check`: it builds the
// gateway's broker-backed store from a fresh snapshot and probes every
// credential through the gateway's own core (proxy.Server.CheckCredentials),
// sequentially. strict adds the completion probe (a tiny chat completion
// per credential). Only BrokerURL,
// BrokerToken, Pool, URLs, Logger, HTTPClient and BrokerHTTPClient of cfg are
// used; nothing listens.
func Check(ctx context.Context, cfg Config, strict bool) ([]proxy.CredentialHealth, error) {
	if cfg.BrokerURL == "" {
		return nil, ErrCheckNoBroker
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	broker := brokerclient.New(cfg.BrokerURL, cfg.BrokerToken, cfg.BrokerHTTPClient)
	if res, err := broker.Snapshot(ctx, nil, 0); err != nil || res.Snapshot == nil {
		return nil, &SnapshotError{Err: err}
	}
	store := remote.New(remote.Options{Client: broker, Logger: log, NoStream: true, Pool: cfg.Pool})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = store.Run(runCtx)
	}()
	defer func() {
		stop()
		<-done
	}()
	t := time.NewTimer(CheckReadyTimeout)
	defer t.Stop()
	select {
	case <-store.Ready():
	case <-t.C:
		return nil, errors.New("auth broker snapshot not loaded: " + store.Status().LastError)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p, err := proxy.New(proxy.Options{Source: store, NoAuth: true, Logger: log, URLs: cfg.URLs, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, err
	}
	return p.CheckCredentials(ctx, strict)
}
