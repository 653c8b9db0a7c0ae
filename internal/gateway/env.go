package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault/remote"
)

// The gateway's own environment variables: the allow-lists of a --no-auth
// gateway (comma-separated) and the cap on request bytes in flight.
const (
	EnvAllowedHosts     = "OMP_AUTH_GATEWAY_ALLOWED_HOSTS"
	EnvAllowedOrigins   = "OMP_AUTH_GATEWAY_ALLOWED_ORIGINS"
	EnvMaxInFlightBytes = "OMP_AUTH_GATEWAY_MAX_INFLIGHT_BYTES"
)

// OverrideLimits replaces the allow-lists and the in-flight cap read from
// the environment with the ones given on the command line: a nil list or
// a zero cap keeps the environment's.
func (c *Config) OverrideLimits(hosts, origins []string, maxInFlight int64) {
	if hosts != nil {
		c.AllowedHosts = hosts
	}
	if origins != nil {
		c.AllowedOrigins = origins
	}
	if maxInFlight != 0 {
		c.MaxInFlightBytes = maxInFlight
	}
}

// splitList is a comma-separated list without blanks; nil when empty.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// FromEnv builds the standard Config of a gateway host: the token path
// from dirs, the broker connection resolved as every broker client does
// (OMP_AUTH_BROKER_URL/TOKEN, config.yml, the broker token file) and upstream URL overrides from the environment and config.yml.
// SnapshotCache is the encrypted snapshot cache every broker client of
// this home uses (OMP_AUTH_BROKER_SNAPSHOT_CACHE, else the cache dir; TTL
// from OMP_AUTH_BROKER_SNAPSHOT_TTL_MS, 0 turning it off). The allow-lists and the
// in-flight cap come from EnvAllowedHosts, EnvAllowedOrigins and
// EnvMaxInFlightBytes. No broker configured leaves
// BrokerURL empty (Open then refuses with
// MsgNoBroker); a URL without a token is *config.MissingTokenError.
// Trusted proxies come from OMP_TRUSTED_PROXIES and the body stall
// timeout from OMP_HTTP_BODY_READ_TIMEOUT. Resolution warnings go to warn.
func FromEnv(ctx context.Context, env *config.Env, dirs config.Dirs, log, warn *slog.Logger) (Config, error) {
	settings, err := config.LoadSettings(dirs.AgentDir, warn)
	if err != nil {
		return Config{}, err
	}
	urls := config.URLs{Env: env, Settings: settings}
	cfg := Config{TokenPath: dirs.GatewayTokenPath(), Logger: log, URLs: urls.URL,
		TrustedProxies: env.Get(httpx.EnvTrustedProxies),
		AllowedHosts:   splitList(env.Get(EnvAllowedHosts)), AllowedOrigins: splitList(env.Get(EnvAllowedOrigins))}
	if v := strings.TrimSpace(env.Get(EnvMaxInFlightBytes)); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("%s=%q: want a number of bytes (negative: no cap)", EnvMaxInFlightBytes, v)
		}
		cfg.MaxInFlightBytes = n
	}
	if d, err := httpx.ParseBodyReadTimeout(env.Get(httpx.EnvBodyReadTimeout)); err != nil {
		warn.Warn("auth-gateway body read timeout ignored; using the default", "error", err.Error())
	} else {
		cfg.BodyReadTimeout = d
	}
	policies, err := settings.AccountPolicies()
	if err != nil {
		return cfg, err
	}
	cfg.Policies = policies
	b, err := config.ResolveBroker(ctx, env, dirs, settings, &config.Resolver{Env: env, Logger: warn})
	if err != nil {
		return cfg, err
	}
	if b != nil {
		cfg.BrokerURL, cfg.BrokerToken = b.URL, b.Token
		// The account pool is read only in broker mode, before the first
		// snapshot request; its errors are *remote.PoolError.
		if cfg.Pool, err = remote.LoadPool(env.Get(remote.EnvAccountPoolFile)); err != nil {
			return cfg, err
		}
		// The install id attributes the gateway's own burn; without one
		// (an unwritable config dir) observed usage is not reported.
		if id, err := config.InstallID(dirs.InstallIDPath()); err == nil {
			cfg.InstallID, cfg.Hostname = id, config.Hostname()
		} else {
			warn.Warn("auth-gateway install id unavailable; observed usage not reported", "error", err.Error())
		}
		// The reference gateway has no snapshot cache; ours keeps one so a
		// gateway restarted during a broker outage still serves (Open
		// reads it only when the broker does not answer).
		if ttl := config.SnapshotTTL(env, warn); ttl > 0 {
			cfg.SnapshotCache = &remote.Cache{Path: dirs.SnapshotCachePath(env), Token: b.Token, URL: b.URL,
				TTL: ttl, Logger: log}
		}
	}
	return cfg, nil
}
