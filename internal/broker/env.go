package broker

import (
	"log/slog"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/httpx"
)

// FromEnv builds the standard Config of a broker host: paths from dirs, the
// vault key from OMP_VAULT_KEY, trusted proxies from OMP_TRUSTED_PROXIES,
// the body stall timeout from OMP_HTTP_BODY_READ_TIMEOUT, upstream URL
// overrides from the environment and config.yml. A config.yml that cannot
// be read or parsed is an error.
func FromEnv(env *config.Env, dirs config.Dirs, log *slog.Logger) (Config, error) {
	settings, err := config.LoadSettings(dirs.AgentDir, log)
	if err != nil {
		return Config{}, err
	}
	urls := config.URLs{Env: env, Settings: settings}
	bodyTimeout, err := httpx.ParseBodyReadTimeout(env.Get(httpx.EnvBodyReadTimeout))
	if err != nil {
		log.Warn("auth-broker body read timeout ignored; using the default", "error", err.Error())
	}
	return Config{
		TrustedProxies:  env.Get(httpx.EnvTrustedProxies),
		BodyReadTimeout: bodyTimeout,
		DBPath:          dirs.VaultDB(),
		LegacyDBPath:    dirs.AgentDB(),
		TokenPath:       dirs.BrokerTokenPath(),
		KeyPath:         dirs.VaultKeyPath(),
		VaultKey:        env.Get("OMP_VAULT_KEY"),
		Logger:          log,
		URLs:            urls.URL,
	}, nil
}
