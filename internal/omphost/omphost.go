// Package omphost is the host half of the omp CLI (hostapi.Host): what
// needs the SQLite vault, serves with Prometheus metrics, or runs the
// interactive mode's terminal UI. Only
// cmd/omp-host links it; the client omp execs omp-host for these commands.
// It must not import internal/ompcli (whose tests use it).
package omphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ompgo/omp/internal/brokerd"
	"github.com/ompgo/omp/internal/clitext"
	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gatewayd"
	"github.com/ompgo/omp/internal/hostapi"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// Host implements hostapi.Host.
type Host struct{}

var _ hostapi.Host = Host{}

// OpenVault opens the sealed SQLite vault at path.
func (Host) OpenVault(ctx context.Context, path string, kr *seal.Keyring) (hostapi.LocalVault, error) {
	st, err := sqlite.Open(ctx, path, kr, sqlite.Options{})
	if errors.Is(err, sqlite.ErrReferenceDB) {
		return nil, fmt.Errorf("%w; move it aside and import it: mv %[2]s %[2]s.plain && omp auth-broker import %[2]s.plain", err, path)
	}
	if err != nil {
		return nil, err // sqlite.Open names the vault path already
	}
	return st, nil
}

// AdoptLegacy is sqlite.AdoptLegacy.
func (Host) HoldVaultToRefresh(path string) (func(), bool, error) {
	h, err := sqlite.HoldVaultToRefresh(path)
	if err != nil {
		return nil, errors.Is(err, sqlite.ErrVaultInUse), err
	}
	return h.Release, false, nil
}

func (Host) AdoptLegacy(ctx context.Context, legacy, path string) (bool, error) {
	return sqlite.AdoptLegacy(ctx, legacy, path)
}

// ReadReference is sqlite.ReadReference.
func (Host) ReadReference(ctx context.Context, path string) ([]vault.Record, error) {
	return sqlite.ReadReference(ctx, path)
}

// IsReference is sqlite.IsReference.
func (Host) IsReference(ctx context.Context, path string) (bool, error) {
	return sqlite.IsReference(ctx, path)
}

// ServeBroker runs the broker (brokerd) with the configuration of env and
// dirs, on bind, with the key file vaultKeyFile when set.
func (Host) ServeBroker(ctx context.Context, env *config.Env, dirs config.Dirs, log *slog.Logger, bind, vaultKeyFile string) error {
	cfg := brokerd.FromEnv(env, dirs, log)
	cfg.Bind = bind
	if vaultKeyFile != "" {
		cfg.KeyPath, cfg.VaultKey = vaultKeyFile, ""
	}
	return brokerd.Serve(ctx, cfg)
}

// ServeGateway runs the gateway (gatewayd) with the configuration of env
// and dirs.
func (Host) ServeGateway(ctx context.Context, env *config.Env, dirs config.Dirs, log, warn *slog.Logger, out io.Writer, f hostapi.GatewayFlags) error {
	cfg, err := gatewayd.FromEnv(ctx, env, dirs, log, warn)
	if err != nil {
		return err
	}
	cfg.Bind, cfg.NoAuth, cfg.AllowNonLoopbackNoAuth = f.Bind, f.NoAuth, f.AllowNonLoopbackNoAuth
	cfg.OverrideLimits(f.AllowedHosts, f.AllowedOrigins, f.MaxInFlightBytes)
	cfg.Out = out
	return gatewayd.Serve(ctx, cfg)
}

// Backup is sqlite.Backup of the vault db to file, verified with kr, and
// its report on out.
func (Host) Backup(ctx context.Context, out io.Writer, db, file string, kr *seal.Keyring, asJSON bool) error {
	info, err := sqlite.Backup(ctx, db, file, kr)
	if err != nil {
		return err
	}
	if asJSON {
		return clitext.JSONLine(out, info)
	}
	fmt.Fprintf(out, "Backed up %s to %s: %d credential%s (%d active), %d bytes, verified with key %s (the copy is sealed: keep the key file too, apart from it)\n",
		db, info.Path, info.Credentials, clitext.Plural(info.Credentials), info.Active, info.Bytes, info.KeyID)
	return nil
}

// Restore is sqlite.Restore of the backup file over the vault db
// (refused while a broker serves it), and its report on out.
func (Host) Restore(ctx context.Context, out io.Writer, file, db string, kr *seal.Keyring, asJSON bool) error {
	res, err := sqlite.Restore(ctx, file, db, kr)
	if err != nil {
		return err
	}
	if asJSON {
		return clitext.JSONLine(out, res)
	}
	fmt.Fprintf(out, "Restored %s from %s: %d credential%s (%d active)\n", res.Path, file, res.Credentials, clitext.Plural(res.Credentials), res.Active)
	if res.Previous != "" {
		fmt.Fprintf(out, "The replaced vault is kept as %s\n", res.Previous)
	}
	return nil
}

// Rekey is sqlite.Rekey of the vault at path with the key file keyPath,
// and its report on out.
func (Host) Rekey(ctx context.Context, out io.Writer, path, keyPath string, asJSON bool) error {
	res, err := sqlite.Rekey(ctx, path, keyPath, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("rekey vault %s with key file %s: %w", path, keyPath, err)
	}
	retired := make([]string, len(res.RetiredIDs))
	for i, id := range res.RetiredIDs {
		retired[i] = fmt.Sprintf("%08x", id)
	}
	if asJSON {
		return clitext.JSONLine(out, map[string]any{
			"resealed":      res.Resealed,
			"activeKeyId":   fmt.Sprintf("%08x", res.ActiveKeyID),
			"retiredKeyIds": retired,
			"path":          keyPath,
		})
	}
	fmt.Fprintf(out, "Re-sealed %d secret%s under key %08x (%s)\n", res.Resealed, clitext.Plural(res.Resealed), res.ActiveKeyID, keyPath)
	if len(retired) > 0 {
		fmt.Fprintf(out, "Retired key%s %s\n", clitext.Plural(len(retired)), strings.Join(retired, ", "))
	}
	return nil
}
