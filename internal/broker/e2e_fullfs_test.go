package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and unmounts
// it when the test ends. It skips the test when mounting is not permitted.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+itoa(size)+",mode=0700"); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
		}
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// fill writes dir/filler until the filesystem answers ENOSPC, down to single
// pages, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill: %v", err)
				}
				break
			}
		}
	}
	return path
}

// healthz reads GET /v1/healthz as a map.
func (b *runningBroker) healthz(t *testing.T) map[string]any {
	t.Helper()
	r := b.do(t, http.MethodGet, "/v1/healthz", "", nil)
	var m map[string]any
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &m) != nil {
		t.Fatalf("GET /v1/healthz = %d %s", r.status, r.body)
	}
	return m
}

// TestE2EFullDiskNeverDropsARotatedToken checks on a real full filesystem
// that a rotated refresh token is never lost: the vault lives on a tiny
// tmpfs that is filled to ENOSPC; a forced refresh rotates the refresh token at the (fake) provider, whose
// reuse detection counts any replaced token presented again. The broker must
// answer with the fresh credential, serve it, spend only the newest refresh
// token, and persist it once space is freed.
func TestE2EFullDiskNeverDropsARotatedToken(t *testing.T) {
	dir := mountTmpfs(t, 4<<20)
	h := &harness{dir: dir, up: newUpstream(t), logs: &syncbuf.Buffer{}, minForced: -1}
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	entries, err := b.client.Upload(ctx, "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: accessA0, Refresh: refreshA0,
		Expires: time.Now().Add(time.Hour).UnixMilli(), Email: "alice@example.com"}) // not due: only forced refreshes
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	id := entries[0].ID
	checkReuse := func(when string) {
		t.Helper()
		if n := h.up.reuses(); n != 0 {
			t.Fatalf("%s: the broker presented a replaced refresh token %d time(s): %+v", when, n, h.up.tokenCalls())
		}
	}

	filler := fill(t, dir)

	// First forced refresh: the provider rotates, the write-back hits ENOSPC.
	e1, err := b.client.Refresh(ctx, id)
	if err != nil {
		t.Fatalf("Refresh with a full disk: %v (the token IS valid: it must be answered)", err)
	}
	calls := h.up.tokenCalls()
	if len(calls) != 1 || calls[0].Refresh != refreshA0 {
		t.Fatalf("token calls = %+v", calls)
	}
	issued := h.up.secrets() // access, refresh of the reply
	access1, refresh1 := issued[0], issued[1]
	if e1.Credential.Access != access1 {
		t.Fatalf("refresh reply access %.24s…, want the fresh one %.24s…", e1.Credential.Access, access1)
	}
	hz := b.healthz(t)
	if hz["pendingWrites"] != 1.0 {
		t.Fatalf("healthz = %v: the write-back did not fail, the disk is not full (the test proves nothing)", hz)
	}
	if v, _ := hz["vault"].(map[string]any); v == nil || v["writable"] != false {
		t.Errorf("healthz vault = %v, want writable false", hz["vault"])
	}
	// The snapshot serves the fresh credential.
	snap := snapshotOf(t, ctx, b.client)
	if e, ok := entryByID(snap.Credentials, id); !ok || e.Credential.Access != access1 {
		t.Fatalf("snapshot entry %+v, want the fresh access token", e)
	}
	checkReuse("after the first refresh")

	// Second forced refresh, disk still full: it must spend refresh1.
	e2, err := b.client.Refresh(ctx, id)
	if err != nil {
		t.Fatalf("second Refresh with a full disk: %v", err)
	}
	calls = h.up.tokenCalls()
	if len(calls) != 2 || calls[1].Refresh != refresh1 {
		t.Fatalf("second token request presented %.30s…, want the newest refresh token %.30s…", calls[len(calls)-1].Refresh, refresh1)
	}
	issued = h.up.secrets()
	access2, refresh2 := issued[2], issued[3]
	if e2.Credential.Access != access2 {
		t.Fatalf("second refresh reply access %.24s…, want %.24s…", e2.Credential.Access, access2)
	}
	checkReuse("after the second refresh")
	_, samples := b.scrape(t)
	if v, ok := find(samples, "omp_broker_pending_writes", nil); !ok || v != 1 {
		t.Errorf("omp_broker_pending_writes = %v (%v), want 1", v, ok)
	}
	if v, ok := find(samples, "omp_broker_vault_write_failures_total", nil); !ok || v < 2 {
		t.Errorf("omp_broker_vault_write_failures_total = %v (%v), want >= 2", v, ok)
	}

	// Free the space: the retry lands.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the pending write to land", func() bool {
		_, pending := b.healthz(t)["pendingWrites"]
		return !pending
	})
	if hz := b.healthz(t); len(hz) != 2 || hz["ok"] != true {
		t.Errorf("healthz after landing = %v, want the reference body", hz)
	}
	checkReuse("after landing")
	b.stop()

	// Reopen the vault: the newest refresh token is what it holds.
	kr, err := seal.LoadKeyFile(filepath.Join(dir, "vault.key"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, h.dbPath(), kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Active() || rec.Credential.Refresh != refresh2 || rec.Credential.Access != access2 {
		t.Fatalf("reopened vault holds refresh %.30s… (active %v), want the newest %.30s…", rec.Credential.Refresh, rec.Active(), refresh2)
	}
	checkReuse("at the end")
}
