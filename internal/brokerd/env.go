package brokerd

import (
	"log/slog"

	"github.com/ompgo/omp/internal/config"
)

// FromEnv builds the standard Config of a broker host: paths from dirs, the
// vault key from OMP_VAULT_KEY, upstream URL overrides from the environment
// and config.yml.
func FromEnv(env *config.Env, dirs config.Dirs, log *slog.Logger) Config {
	settings := config.LoadSettings(dirs.AgentDir, log)
	urls := config.URLs{Env: env, Settings: settings}
	return Config{
		DBPath:       dirs.VaultDB(),
		LegacyDBPath: dirs.AgentDB(),
		TokenPath:    dirs.BrokerTokenPath(),
		KeyPath:      dirs.VaultKeyPath(),
		VaultKey:     env.Get("OMP_VAULT_KEY"),
		Logger:       log,
		URLs:         urls.URL,
	}
}
