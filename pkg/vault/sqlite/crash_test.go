package sqlite_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const (
	crashEnvPath = "OMP_VAULT_CRASH_CHILD"
	crashEnvKey  = "OMP_VAULT_CRASH_KEY"
)

func crashToken(n int) string  { return fmt.Sprintf("rotated-refresh-%06d-PLAINTEXT", n) }
func crashAccess(n int) string { return fmt.Sprintf("rotated-access-%06d-PLAINTEXT", n) }

func crashSeq(t testing.TB, refresh string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(refresh, "rotated-refresh-%06d-PLAINTEXT", &n); err != nil {
		t.Fatalf("refresh token is not one the writer produced (%d bytes)", len(refresh))
	}
	return n
}

// TestCrashChild is the helper process of TestRefreshWriteBackSurvivesKill:
// it rotates the refresh token of row 1 in a loop and prints "ok <n>" after
// each UpdateCredential returned. It does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvPath)
	if path == "" {
		t.Skip("helper process")
	}
	kr, err := seal.KeyringFromEnv(os.Getenv(crashEnvKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for n := crashSeq(t, rec.Credential.Refresh) + 1; ; n++ {
		c := rec.Credential
		c.Refresh, c.Access, c.Expires = crashToken(n), crashAccess(n), int64(n)
		if _, err := st.UpdateCredential(ctx, 1, c); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ok %d\n", n)
	}
}

// TestRefreshWriteBackSurvivesKill: a rotated refresh token is committed
// before the write-back returns, and SIGKILL at any point leaves either the
// last acknowledged token or the one being written — never an older one,
// never an empty or unreadable row, never a plaintext token on disk.
func TestRefreshWriteBackSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	e := newEnv(t)
	key := e.kr.Keys()[0]
	st := e.open(t)
	c := oauth("a@x.io", crashToken(0))
	c.Access = crashAccess(0)
	if _, err := st.Upsert(ctx, "anthropic", c); err != nil {
		t.Fatal(err)
	}
	st.Close()

	acked, totalAcks := 0, 0
	for round := range 6 {
		// Odd rounds kill at a random moment after start (possibly before the
		// first write); even rounds wait for writes to flow first.
		ack := int(killChildMidWrite(t, "TestCrashChild", []string{crashEnvPath + "=" + e.path,
			crashEnvKey + "=" + base64.StdEncoding.EncodeToString(key.Secret[:])}, round%2 == 0, 150*time.Millisecond, int64(acked)))
		totalAcks += ack - acked

		// The killed writer's files (db, -wal, -shm) hold no plaintext.
		assertNoPlaintext(t, e.path, []byte("PLAINTEXT"), key.Secret[:])

		st := e.open(t)
		rec, err := st.Get(ctx, 1)
		if err != nil {
			t.Fatalf("round %d: row unreadable after kill: %v", round, err)
		}
		got := crashSeq(t, rec.Credential.Refresh)
		if got != ack && got != ack+1 {
			t.Fatalf("round %d: refresh token #%d after kill; last acknowledged #%d", round, got, ack)
		}
		if rec.Credential.Access != crashAccess(got) || rec.Credential.Expires != int64(got) || !rec.Active() {
			t.Fatalf("round %d: row is torn: %v", round, rec.Credential)
		}
		if n := must[[]vault.Record](t)(st.List(ctx, "")); len(n) != 1 {
			t.Fatalf("round %d: %d active rows", round, len(n))
		}
		st.Close()
		acked = got
	}
	if totalAcks == 0 {
		t.Fatal("no write was acknowledged in any round: the test exercised nothing")
	}
	t.Logf("%d acknowledged rotations across 6 kills", totalAcks)
}

// killChildMidWrite runs the test binary's helper test child with env
// added, reads its "ok <n>" acknowledgements, waits for the first when
// waitFirst, then kills it with SIGKILL at a random moment up to maxDelay
// later (so the kill lands anywhere in a write) and returns the last n it
// acknowledged (prev when it acknowledged none).
func killChildMidWrite(t *testing.T, child string, env []string, waitFirst bool, maxDelay time.Duration, prev int64) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last atomic.Int64
	last.Store(prev)
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "ok" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				last.Store(n)
				if !once {
					once = true
					close(first)
				}
			}
		}
	}()
	if waitFirst {
		select {
		case <-first:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("child never acknowledged a write")
		}
	}
	// Not a wait for anything: a random moment to kill at.
	time.Sleep(time.Duration(rand.IntN(int(maxDelay/time.Millisecond))) * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	cmd.Wait()
	return last.Load()
}
