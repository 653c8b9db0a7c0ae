package deploy_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// runningBroker is a real broker.Main on 127.0.0.1:0 over a given vault.
type runningBroker struct {
	client *brokerclient.Client
	stop   func()
}

func startBroker(t *testing.T, dbPath, keyPath, tokenPath string) *runningBroker {
	t.Helper()
	m := &broker.Main{Config: broker.Config{
		Bind: "127.0.0.1:0", DBPath: dbPath, KeyPath: keyPath, TokenPath: tokenPath,
		Logger:          slog.New(slog.DiscardHandler),
		URLs:            func(string, string) string { return "http://127.0.0.1:1" },
		RefreshInterval: time.Hour,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	stopped := false
	b := &runningBroker{client: brokerclient.New(m.URL(), strings.TrimSpace(string(tok)), nil)}
	b.stop = func() {
		if stopped {
			return
		}
		stopped = true
		stopRun()
		if err := <-done; err != nil {
			t.Errorf("broker Run: %v", err)
		}
		m.Close()
	}
	t.Cleanup(b.stop)
	return b
}

// served is what the broker serves, without the time-dependent rotation
// estimates.
func (b *runningBroker) served(t *testing.T) []vault.Entry {
	t.Helper()
	res, err := b.client.Snapshot(context.Background(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Snapshot.Credentials
	for i := range out {
		out[i].RotatesInMs = nil
	}
	return out
}

// TestLitestreamReplicaRestoresVault replicates a serving broker's vault
// with the real Litestream binary to a file replica, destroys the vault,
// restores it from the replica, and checks that a broker started on the
// restored vault serves exactly what the first one served. It needs
// OMP_LITESTREAM (set by `make litestream-test`, which installs Litestream
// with go install).
func TestLitestreamReplicaRestoresVault(t *testing.T) {
	ls := os.Getenv("OMP_LITESTREAM")
	if ls == "" {
		t.Skip("OMP_LITESTREAM not set: `make litestream-test` installs Litestream and runs this")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "state", "agent", "vault.db")
	key := filepath.Join(dir, "state", "vault.key")
	tok := filepath.Join(dir, "state", "auth-broker.token")
	replica := filepath.Join(dir, "replica")
	cfg := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "dbs:\n  - path: %s\n    replicas:\n      - type: file\n        path: %s\n        sync-interval: 100ms\n", db, replica), 0o600); err != nil {
		t.Fatal(err)
	}

	b := startBroker(t, db, key, tok)
	ctx := context.Background()
	upload := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: fmt.Sprintf("sk-replicated-%03d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	upload(0, 10)

	rep := exec.Command(ls, "replicate", "-config", cfg)
	var repLog strings.Builder
	rep.Stdout, rep.Stderr = &repLog, &repLog
	if err := rep.Start(); err != nil {
		t.Fatal(err)
	}
	repDone := make(chan error, 1)
	go func() { repDone <- rep.Wait() }()
	stopRep := func() {
		if rep.ProcessState == nil {
			rep.Process.Signal(syscall.SIGTERM)
			select {
			case <-repDone:
			case <-time.After(10 * time.Second):
				rep.Process.Kill()
				<-repDone
			}
		}
	}
	t.Cleanup(stopRep)

	// Writes while Litestream runs, in several bursts.
	for burst := 1; burst <= 3; burst++ {
		upload(burst*10, burst*10+10)
		time.Sleep(200 * time.Millisecond)
	}
	want := b.served(t)
	if len(want) != 40 {
		t.Fatalf("broker serves %d credentials, want 40", len(want))
	}

	// Wait until a restore of the replica holds every write.
	kr, err := seal.LoadKeyFile(key)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(dir, "probe")
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; ; n++ {
		out := filepath.Join(probe, fmt.Sprintf("try-%d.db", n))
		os.MkdirAll(probe, 0o700)
		res, err := exec.Command(ls, "restore", "-config", cfg, "-o", out, db).CombinedOutput()
		if err == nil {
			if info, verr := sqlite.Verify(ctx, out, kr); verr == nil && info.Active == len(want) {
				t.Logf("replica caught up after %d probes: %d credentials", n+1, info.Active)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never held all %d writes; last restore: %v %s\nlitestream:\n%s", len(want), err, res, repLog.String())
		}
		time.Sleep(250 * time.Millisecond)
	}

	// The host is lost: broker and Litestream stop, the vault is gone.
	b.stop()
	stopRep()
	for _, p := range []string{db, db + "-wal", db + "-shm", db + ".lock"} {
		os.Remove(p)
	}
	os.RemoveAll(filepath.Join(filepath.Dir(db), "."+filepath.Base(db)+"-litestream"))
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("vault still there: %v", err)
	}

	// Restore from the replica with the key, and serve.
	if out, err := exec.Command(ls, "restore", "-config", cfg, db).CombinedOutput(); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, out)
	}
	info, err := sqlite.Verify(ctx, db, kr)
	if err != nil {
		t.Fatalf("restored vault does not verify with the key: %v", err)
	}
	t.Logf("restored vault: %d credentials, %d bytes", info.Active, info.Bytes)
	b2 := startBroker(t, db, key, tok)
	if got := b2.served(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored broker serves\n%+v\nwant\n%+v", got, want)
	}
}
