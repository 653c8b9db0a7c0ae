package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/config"
	"github.com/ompgo/omp/internal/gateway"
)

func TestFromEnvResolvesBrokerLikeEveryClient(t *testing.T) {
	home := t.TempDir()
	env := config.NewEnv(map[string]string{"HOME": home})
	dirs, err := config.ResolveDirs(*env)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	cfg, err := gateway.FromEnv(ctx, env, dirs, log, log)
	if err != nil || cfg.BrokerURL != "" || cfg.TokenPath != filepath.Join(home, ".omp", "auth-gateway.token") {
		t.Fatalf("no broker: %+v %v", cfg, err)
	}

	env = config.NewEnv(map[string]string{"HOME": home, "OMP_AUTH_BROKER_URL": "http://broker:8765"})
	_, err = gateway.FromEnv(ctx, env, dirs, log, log)
	var missing *config.MissingTokenError
	if !errors.As(err, &missing) {
		t.Fatalf("URL without token: %v", err)
	}

	// The broker token file of the same home is the last fallback.
	if err := os.MkdirAll(dirs.ConfigDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirs.BrokerTokenPath(), []byte("broker-tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = gateway.FromEnv(ctx, env, dirs, log, log)
	if err != nil || cfg.BrokerURL != "http://broker:8765" || cfg.BrokerToken != "broker-tok" {
		t.Fatalf("token file: %+v %v", cfg.BrokerURL, err)
	}
	env = config.NewEnv(map[string]string{"HOME": home, "OMP_AUTH_BROKER_URL": "http://broker:8765", "OMP_AUTH_BROKER_TOKEN": "env-tok"})
	if cfg, err = gateway.FromEnv(ctx, env, dirs, log, log); err != nil || cfg.BrokerToken != "env-tok" {
		t.Fatalf("env token wins: %v", err)
	}
	// The snapshot cache is on by default, at the path every broker
	// client of this home uses, bound to the broker URL and token.
	if c := cfg.SnapshotCache; c == nil || c.Path != dirs.SnapshotCachePath(env) || c.URL != "http://broker:8765" ||
		c.Token != "env-tok" || c.TTL != config.DefaultSnapshotTTL {
		t.Fatalf("default snapshot cache: %+v", cfg.SnapshotCache)
	}
	// A TTL of 0 turns it off.
	env = config.NewEnv(map[string]string{"HOME": home, "OMP_AUTH_BROKER_URL": "http://broker:8765", "OMP_AUTH_BROKER_TOKEN": "env-tok",
		"OMP_AUTH_BROKER_SNAPSHOT_TTL_MS": "0"})
	if cfg, err = gateway.FromEnv(ctx, env, dirs, log, log); err != nil || cfg.SnapshotCache != nil {
		t.Fatalf("snapshot cache with TTL 0: %+v %v", cfg.SnapshotCache, err)
	}

	// An explicit cache path and TTL are used as given.
	env = config.NewEnv(map[string]string{"HOME": home, "OMP_AUTH_BROKER_URL": "http://broker:8765/", "OMP_AUTH_BROKER_TOKEN": "env-tok",
		"OMP_AUTH_BROKER_SNAPSHOT_CACHE": "/var/cache/gw.enc", "OMP_AUTH_BROKER_SNAPSHOT_TTL_MS": "60000"})
	cfg, err = gateway.FromEnv(ctx, env, dirs, log, log)
	if c := cfg.SnapshotCache; err != nil || c == nil || c.Path != "/var/cache/gw.enc" || c.URL != "http://broker:8765/" ||
		c.Token != "env-tok" || c.TTL != time.Minute {
		t.Fatalf("snapshot cache config: %+v %v", cfg.SnapshotCache, err)
	}
}

func TestFromEnvReadsTheGatewayLimits(t *testing.T) {
	home := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	env := config.NewEnv(map[string]string{"HOME": home,
		gateway.EnvAllowedHosts:     " gw.internal, ,omp.example ",
		gateway.EnvAllowedOrigins:   "http://app.internal:3000",
		gateway.EnvMaxInFlightBytes: "1048576"})
	dirs, err := config.ResolveDirs(*env)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.FromEnv(context.Background(), env, dirs, log, log)
	if err != nil || !slices.Equal(cfg.AllowedHosts, []string{"gw.internal", "omp.example"}) ||
		!slices.Equal(cfg.AllowedOrigins, []string{"http://app.internal:3000"}) || cfg.MaxInFlightBytes != 1<<20 {
		t.Fatalf("%v %v %d %v", cfg.AllowedHosts, cfg.AllowedOrigins, cfg.MaxInFlightBytes, err)
	}
	env = config.NewEnv(map[string]string{"HOME": home, gateway.EnvMaxInFlightBytes: "256MiB"})
	if _, err := gateway.FromEnv(context.Background(), env, dirs, log, log); err == nil || !strings.Contains(err.Error(), gateway.EnvMaxInFlightBytes) {
		t.Fatalf("a size that is not a number: %v, want an error naming %s", err, gateway.EnvMaxInFlightBytes)
	}
}
