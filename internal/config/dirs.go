package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Default directory names.
const (
	DefaultConfigDirName = ".omp"
	appName              = "omp"
)

// File names under the config and agent directories.
const (
	BrokerTokenFile   = "auth-broker.token"
	GatewayTokenFile  = "auth-gateway.token"
	VaultKeyFile      = "vault.key"
	AgentDBFile       = "agent.db"
	VaultDBFile       = "vault.db"
	SnapshotCacheFile = "auth-broker-snapshot.enc"
)

// goos is runtime.GOOS, a variable so tests can exercise the XDG rule.
var goos = runtime.GOOS

// Dirs holds the resolved directory roots.
type Dirs struct {
	Home      string // the user's home directory ($HOME)
	ConfigDir string // <home>/<PI_CONFIG_DIR>, default ~/.omp
	AgentDir  string // PI_CODING_AGENT_DIR made absolute, default <ConfigDir>/agent

	// XDGData and XDGCache are $XDG_DATA_HOME/omp and $XDG_CACHE_HOME/omp when
	// the XDG rule applies (Linux or macOS, default agent dir, directory
	// already exists); "" otherwise.
	XDGData  string
	XDGCache string
}

// ResolveDirs computes the directories from env (HOME, PI_CONFIG_DIR,
// PI_CODING_AGENT_DIR, XDG_DATA_HOME, XDG_CACHE_HOME). PI_CONFIG_DIR is a
// name joined under the home directory, never absolute. It fails only when
// HOME is unset or the agent dir cannot be made absolute.
func ResolveDirs(env Env) (Dirs, error) {
	home := env.Get("HOME")
	if home == "" {
		return Dirs{}, errors.New("config: cannot determine the home directory: HOME is not set")
	}
	name := env.Get("PI_CONFIG_DIR")
	if name == "" {
		name = DefaultConfigDirName
	}
	d := Dirs{Home: home, ConfigDir: filepath.Join(home, name)}
	defaultAgent := filepath.Join(d.ConfigDir, "agent")
	d.AgentDir = defaultAgent
	if o := env.Get("PI_CODING_AGENT_DIR"); o != "" {
		abs, err := filepath.Abs(o)
		if err != nil {
			return Dirs{}, fmt.Errorf("config: resolve PI_CODING_AGENT_DIR: %w", err)
		}
		d.AgentDir = abs
	}
	if (goos == "linux" || goos == "darwin") && d.AgentDir == defaultAgent {
		d.XDGData = xdgRoot(env.Get("XDG_DATA_HOME"))
		d.XDGCache = xdgRoot(env.Get("XDG_CACHE_HOME"))
	}
	return d, nil
}

// xdgRoot returns <base>/omp when base is set and that directory exists.
func xdgRoot(base string) string {
	if base == "" {
		return ""
	}
	root := filepath.Join(base, appName)
	if st, err := os.Stat(root); err == nil && st.IsDir() {
		return root
	}
	return ""
}

// AgentDB is the reference implementation's local credential store:
// $XDG_DATA_HOME/omp/agent.db under the XDG rule, else <AgentDir>/agent.db.
// omp-go only ever reads it (migrate --from-local, import); it never opens
// it for writing.
func (d Dirs) AgentDB() string { return filepath.Join(d.dataDir(), AgentDBFile) }

// VaultDB is the Go broker's sealed vault, beside where agent.db would be:
// $XDG_DATA_HOME/omp/vault.db under the XDG rule, else <AgentDir>/vault.db.
func (d Dirs) VaultDB() string { return filepath.Join(d.dataDir(), VaultDBFile) }

// dataDir is where the credential stores live: the XDG data root when the
// XDG rule applies, else the agent dir.
func (d Dirs) dataDir() string {
	if d.XDGData != "" {
		return d.XDGData
	}
	return d.AgentDir
}

// BrokerTokenPath is <ConfigDir>/auth-broker.token (never moved by XDG).
func (d Dirs) BrokerTokenPath() string { return filepath.Join(d.ConfigDir, BrokerTokenFile) }

// GatewayTokenPath is <ConfigDir>/auth-gateway.token (never moved by XDG).
func (d Dirs) GatewayTokenPath() string { return filepath.Join(d.ConfigDir, GatewayTokenFile) }

// VaultKeyPath is <ConfigDir>/vault.key, the Go vault's sealing key file.
func (d Dirs) VaultKeyPath() string { return filepath.Join(d.ConfigDir, VaultKeyFile) }

// SnapshotCachePath is OMP_AUTH_BROKER_SNAPSHOT_CACHE when set, else
// $XDG_CACHE_HOME/omp/cache/auth-broker-snapshot.enc under the XDG rule,
// else <ConfigDir>/cache/auth-broker-snapshot.enc.
func (d Dirs) SnapshotCachePath(env *Env) string {
	if o := env.Get(EnvSnapshotCache); o != "" {
		return o
	}
	base := d.ConfigDir
	if d.XDGCache != "" {
		base = d.XDGCache
	}
	return filepath.Join(base, "cache", SnapshotCacheFile)
}

// ConfigYML is <AgentDir>/config.yml (LoadSettings also tries config.yaml).
func (d Dirs) ConfigYML() string { return filepath.Join(d.AgentDir, "config.yml") }
