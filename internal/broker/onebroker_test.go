//go:build unix

package broker_test

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/broker"
	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// secondBrokerMessage is the error a broker gets when the broker with pid
// and url already serves the vault at db.
func secondBrokerMessage(db string, pid int, url string) string {
	return "vault " + db + " is served by another broker (pid " + strconv.Itoa(pid) + ", " + url +
		"); stop it first or point this one at another vault"
}

// TestSecondBrokerOnOneVaultRefused: a second broker on a served vault
// fails to open with the first one's pid and address, the first keeps
// serving, and once the first stops a new broker starts on the vault.
func TestSecondBrokerOnOneVaultRefused(t *testing.T) {
	h := newHarness(t)
	first := h.start(t)

	second := &broker.Main{Config: h.config()}
	err := second.Open(context.Background())
	if err == nil {
		second.Close()
		t.Fatal("a second broker opened a served vault")
	}
	if want := secondBrokerMessage(h.dbPath(), os.Getpid(), first.url); err.Error() != want {
		t.Fatalf("second Open: %v\nwant %s", err, want)
	}
	if !errors.Is(err, sqlite.ErrVaultInUse) {
		t.Fatalf("second Open: %v, want ErrVaultInUse", err)
	}

	// The refused broker changed nothing: the first still serves and writes.
	ctx := context.Background()
	if _, err := first.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-after-refusal"}); err != nil {
		t.Fatalf("first broker after the refusal: %v", err)
	}

	first.stop()
	third := h.start(t)
	res, err := third.client.Snapshot(ctx, nil, 0)
	if err != nil || len(res.Snapshot.Credentials) != 1 {
		t.Fatalf("snapshot of the broker started after the first stopped: %+v %v", res.Snapshot, err)
	}
}

// TestVaultCommandsBesideServingBroker: the vault commands that open the
// vault without the broker's hold (backup, verify, and the local store of
// import, login and logout) work while a broker serves it; the broker sees
// their writes. Restore is refused with the broker's pid and address.
func TestVaultCommandsBesideServingBroker(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx := context.Background()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-served"}); err != nil {
		t.Fatal(err)
	}
	kr, err := seal.LoadKeyFile(filepath.Join(h.dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}

	backup := filepath.Join(t.TempDir(), "backup.db")
	info, err := sqlite.Backup(ctx, h.dbPath(), backup, kr)
	if err != nil || info.Active != 1 {
		t.Fatalf("backup beside a serving broker: %+v %v", info, err)
	}
	if info, err := sqlite.Verify(ctx, h.dbPath(), kr); err != nil || info.Active != 1 {
		t.Fatalf("verify beside a serving broker: %+v %v", info, err)
	}

	st, err := sqlite.Open(ctx, h.dbPath(), kr, sqlite.Options{})
	if err != nil {
		t.Fatalf("open the vault beside a serving broker: %v", err)
	}
	if recs, err := st.List(ctx, ""); err != nil || len(recs) != 1 {
		t.Fatalf("list beside a serving broker: %v %v", recs, err)
	}
	if _, err := st.Upsert(ctx, "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-from-the-cli"}); err != nil {
		t.Fatalf("write beside a serving broker: %v", err)
	}
	st.Close()
	eventually(t, waitLong, "the broker to serve the CLI's write", func() bool {
		res, err := b.client.Snapshot(ctx, nil, 0)
		return err == nil && len(res.Snapshot.Credentials) == 2
	})

	_, err = sqlite.Restore(ctx, backup, h.dbPath(), kr)
	if !errors.Is(err, sqlite.ErrVaultInUse) || !strings.Contains(err.Error(), "(pid "+strconv.Itoa(os.Getpid())+", "+b.url+")") {
		t.Fatalf("restore under a serving broker: %v, want the broker's pid and address", err)
	}
}

// helperDirEnv, when set, makes TestBrokerProcessHelper serve the vault in
// that directory (this test binary re-executed as a second process).
const helperDirEnv = "OMP_TEST_BROKER_HELPER_DIR"

// TestBrokerProcessHelper is not a test of its own: run by
// TestSecondBrokerProcessRefused in a child process, it serves the vault in
// $OMP_TEST_BROKER_HELPER_DIR, prints "ready <url>" and runs until killed.
func TestBrokerProcessHelper(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestSecondBrokerProcessRefused")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	m := &broker.Main{Config: broker.Config{
		Bind:            "127.0.0.1:0",
		DBPath:          filepath.Join(dir, "vault.db"),
		TokenPath:       filepath.Join(dir, "auth-broker.token"),
		KeyPath:         filepath.Join(dir, "vault.key"),
		Logger:          slog.New(slog.DiscardHandler),
		RefreshInterval: time.Hour,
	}}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	os.Stdout.WriteString("ready " + m.URL() + "\n")
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSecondBrokerProcessRefused: with a broker serving the vault in
// another process, a broker here fails to open naming that process's pid
// and address; after the other process is killed with SIGKILL, its hold is
// gone and a broker here starts.
func TestSecondBrokerProcessRefused(t *testing.T) {
	h := newHarness(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerProcessHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+h.dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- url
				return
			}
		}
		close(ready)
	}()
	var url string
	select {
	case u, ok := <-ready:
		if !ok {
			t.Fatal("the helper broker exited before it was ready")
		}
		url = u
	case <-time.After(4 * waitLong):
		t.Fatal("the helper broker was not ready in time")
	}

	m := &broker.Main{Config: h.config()}
	if err := m.Open(context.Background()); err == nil || err.Error() != secondBrokerMessage(h.dbPath(), cmd.Process.Pid, url) {
		if err == nil {
			m.Close()
		}
		t.Fatalf("Open beside the helper broker: %v\nwant %s", err, secondBrokerMessage(h.dbPath(), cmd.Process.Pid, url))
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs in the helper
		t.Fatal(err)
	}
	cmd.Wait()
	b := h.start(t)
	if _, err := b.client.Snapshot(context.Background(), nil, 0); err != nil {
		t.Fatalf("broker started after the holder was killed: %v", err)
	}
}
