// Package hostapi is the contract between the omp CLI (internal/ompcli)
// and its host half (internal/omphost), which only the omp-host binary
// links. It sits apart from both so that omphost need not import ompcli
// (ompcli's tests run every command in process with omphost.Host).
package hostapi

import (
	"context"
	"io"
	"log/slog"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/pkg/agent/interactive"
	"github.com/ompgo/omp/pkg/agent/session"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// Host is what only the host binary, omp-host, links: the SQLite vault
// (modernc.org/sqlite and its libc), the servers with their Prometheus
// metrics and the interactive mode's terminal UI (the Charm stack). internal/omphost implements it. The client omp has none: a
// command that needs it replaces the client process with omp-host (same
// arguments, environment, streams and exit code; internal/ompcli/host.go),
// so users keep typing `omp …` and the client starts without paying for
// those packages.
type Host interface {
	// OpenVault opens the sealed vault at path; an error names the path
	// (and, for a reference database there, how to import it).
	OpenVault(ctx context.Context, path string, kr *seal.Keyring) (LocalVault, error)
	// HoldVaultToRefresh claims the vault at path for a local command that
	// refreshes credentials; it fails with an error matching
	// sqlite.ErrVaultInUse (inUse true) while a broker serves the vault.
	// release drops the claim.
	HoldVaultToRefresh(path string) (release func(), inUse bool, err error)
	// AdoptLegacy moves an omp-go vault left at the reference's agent.db
	// path (legacy) to path, once (discrepancies.md C5).
	AdoptLegacy(ctx context.Context, legacy, path string) (moved bool, err error)
	// ReadReference reads a reference agent.db (read only); IsReference
	// tells one from an omp-go vault.
	ReadReference(ctx context.Context, path string) ([]vault.Record, error)
	IsReference(ctx context.Context, path string) (bool, error)
	// Backup, Restore and Rekey run the vault maintenance actions and print
	// their reports (text or one JSON line) on out.
	Backup(ctx context.Context, out io.Writer, db, file string, kr *seal.Keyring, asJSON bool) error
	Restore(ctx context.Context, out io.Writer, file, db string, kr *seal.Keyring, asJSON bool) error
	Rekey(ctx context.Context, out io.Writer, path, keyPath string, asJSON bool) error
	// ServeBroker runs `auth-broker serve` until ctx ends.
	ServeBroker(ctx context.Context, env *config.Env, dirs config.Dirs, log *slog.Logger, bind, vaultKeyFile string) error
	// ServeGateway runs `auth-gateway serve` until ctx ends; out carries
	// the reference's start-up and shutdown lines.
	ServeGateway(ctx context.Context, env *config.Env, dirs config.Dirs, log, warn *slog.Logger, out io.Writer, flags GatewayFlags) error
	// CheckGateway runs `auth-gateway check` and prints its report on out;
	// exit is the exit code it asks for (with err: err's text alone).
	CheckGateway(ctx context.Context, env *config.Env, dirs config.Dirs, log, warn *slog.Logger, out io.Writer, strict, asJSON bool) (exit int, err error)
	// RunInteractive runs the agent's interactive mode (pkg/agent/tui, on
	// the Charm terminal stack) until the user quits and returns the
	// session in use at the end, for the caller to persist.
	RunInteractive(ctx context.Context, opt interactive.Options) (*session.File, error)
}

// LocalVault is the broker host's sealed vault as the commands use it
// (*sqlite.Store).
type LocalVault interface {
	vault.Store
	vault.TokenStore
	vault.CacheStore
	vault.HistoryStore
	ClientUsage(ctx context.Context, sinceMs int64, byAccount bool) ([]vault.ClientSummary, error)
	ListDisabled(ctx context.Context, provider string) ([]vault.Record, error)
	ImportRecords(ctx context.Context, recs []vault.Record) (int, error)
}

// GatewayFlags are the flags of `auth-gateway serve`. The allow-lists and
// the cap, when given, replace the environment's.
type GatewayFlags struct {
	Bind                   string
	NoAuth                 bool
	AllowNonLoopbackNoAuth bool
	AllowedHosts           []string
	AllowedOrigins         []string
	// MaxInFlightBytes is the cap on request body bytes held at once; 0
	// keeps the environment's (or the default), negative is no cap.
	MaxInFlightBytes int64
}
