package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// serveHome runs a real broker over the vault and key file of h; stop ends
// it and releases the vault.
func serveHome(t *testing.T, h *rekeyHome) (b *testBroker, stop func()) {
	t.Helper()
	m := &broker.Main{Config: broker.Config{
		Bind:            "127.0.0.1:0",
		DBPath:          h.dbPath,
		TokenPath:       filepath.Join(filepath.Dir(h.dbPath), "auth-broker.token"),
		KeyPath:         h.keyPath,
		Logger:          slog.New(slog.DiscardHandler),
		URLs:            func(string, string) string { return "http://" + closedAddr(t) },
		RefreshInterval: time.Hour,
		PollInterval:    50 * time.Millisecond,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		t.Fatalf("broker Open: %v", err)
	}
	raw, err := os.ReadFile(m.Config.TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	stop = sync.OnceFunc(func() {
		cancelRun()
		if err := <-done; err != nil {
			t.Errorf("broker Run: %v", err)
		}
		m.Close()
	})
	t.Cleanup(stop)
	tok := strings.TrimSpace(string(raw))
	return &testBroker{url: m.URL(), token: tok, client: brokerclient.New(m.URL(), tok, nil)}, stop
}

// `backup` copies the vault of a running broker while it takes uploads;
// `restore` refuses while the broker runs, and once it is stopped puts the
// backup in place, and a broker started on it serves the backed-up rows.
func TestBackupRestoreCLIWithRunningBroker(t *testing.T) {
	h := newRekeyHome(t)
	b, stop := serveHome(t, h)

	// A client keeps uploading API keys while the backup runs.
	// Stopped between uploads, so every upload it made has finished when
	// wg.Wait returns.
	ctx := context.Background()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var uploads atomic.Int64 // uploads acknowledged
	waitUploads := func(n int64) {
		for deadline := time.Now().Add(testTimeout); uploads.Load() < n && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: fmt.Sprintf("sk-live-%d", i)}); err != nil {
				t.Errorf("upload %d: %v", i, err)
				return
			}
			uploads.Store(int64(i + 1))
		}
	}()
	waitUploads(3)
	file := filepath.Join(t.TempDir(), "vault-backup.db")
	before := uploads.Load()
	code, out, errOut := rekeyRun(t, h.environ, "auth-broker", "backup", file, "--json")
	after := uploads.Load() + 1 // the upload in flight may be in the copy
	waitUploads(after + 2)
	close(quit)
	wg.Wait()
	if code != 0 {
		t.Fatalf("backup exit %d: %s", code, errOut)
	}
	var info struct {
		Path        string `json:"path"`
		Credentials int    `json:"credentials"`
		Active      int    `json:"active"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("backup --json: %v in %q", err, out)
	}
	// 2 seeded rows + the uploads that had committed when the copy was read.
	if n := int64(info.Active - 2); n < before || n > after || info.Path != file {
		t.Fatalf("backup = %+v; uploads acknowledged: %d before it, ≤ %d after", info, before, after)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v", fi, err)
	}
	live := b.state(t)

	// Restore under the running broker: refused, the vault untouched.
	code, _, errOut = rekeyRun(t, h.environ, "auth-broker", "restore", file)
	if code == 0 || !strings.Contains(errOut, "a broker is serving") {
		t.Fatalf("restore under a running broker: exit %d, %q", code, errOut)
	}
	if got := b.state(t); !slices.Equal(got, live) {
		t.Fatalf("a refused restore changed what the broker serves")
	}
	stop()

	code, out, errOut = rekeyRun(t, h.environ, "auth-broker", "restore", file)
	if code != 0 {
		t.Fatalf("restore exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("%d credentials (%d active)", info.Credentials, info.Active)) || !strings.Contains(out, "kept as") {
		t.Fatalf("restore output %q", out)
	}
	b2, _ := serveHome(t, h)
	got := b2.state(t)
	if len(got) != info.Active {
		t.Fatalf("restored broker serves %d credentials, backup holds %d", len(got), info.Active)
	}
	if len(live) <= len(got) || !isSubset(got, live) {
		t.Fatalf("restored broker serves %v, want the first %d of %v", got, info.Active, live)
	}
}

func isSubset(small, big []string) bool {
	for _, s := range small {
		if !slices.Contains(big, s) {
			return false
		}
	}
	return true
}

func TestBackupCLIErrors(t *testing.T) {
	h := newRekeyHome(t)
	file := filepath.Join(t.TempDir(), "b.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing key file", []string{"auth-broker", "backup", file, "--vault-key-file", filepath.Join(t.TempDir(), "nope.key")}, "vault key"},
		{"no file argument", []string{"auth-broker", "backup"}, "accepts 1 arg(s), received 0"},
		{"restore a missing file", []string{"auth-broker", "restore", filepath.Join(t.TempDir(), "none.db")}, "restore vault"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := rekeyRun(t, h.environ, tc.args...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errOut, tc.want)
			}
		})
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("a failed backup wrote the file")
	}
}
