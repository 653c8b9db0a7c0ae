package remote_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/remote"
)

// refCache runs scripts/snapcache-ref.ts (the reference implementation's
// own snapshot-cache code under its bun) with args; the test is skipped
// unless OMP_INTEROP_REF names the reference install (`make interop` sets
// it to .interop).
func refCache(t *testing.T, args ...string) []byte {
	t.Helper()
	ref := os.Getenv("OMP_INTEROP_REF")
	if ref == "" {
		t.Skip("OMP_INTEROP_REF not set (make interop)")
	}
	ref, err := filepath.Abs(ref)
	if err != nil {
		t.Fatal(err)
	}
	bun := filepath.Join(ref, "node_modules/@oven/bun-linux-x64/bin/bun")
	script, err := filepath.Abs("../../../scripts/snapcache-ref.ts")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bun, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "OMP_INTEROP_REF="+ref)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference %v: %v\n%s", args[0], err, out)
	}
	return out
}

// TestInteropReferenceReadsOurCache: a cache file we write opens with the
// reference's reader to the snapshot we were given; with another URL or
// token the reference misses (null), as we do.
func TestInteropReferenceReadsOurCache(t *testing.T) {
	snap := readFile(t, "testdata/snapshot.json")
	path := filepath.Join(t.TempDir(), "cache", "auth-broker-snapshot.enc")
	c := &remote.Cache{Path: path, Token: fixtureToken, URL: fixtureURL, TTL: time.Hour}
	if err := c.Write(snap); err != nil {
		t.Fatal(err)
	}
	now := "1765000060000"
	out := refCache(t, "read", path, fixtureToken, fixtureURL, "3600000", now)
	var got, want any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("reference output %q: %v", out, err)
	}
	json.Unmarshal(snap, &want)
	if !jsonEqual(got, want) {
		t.Fatalf("the reference read\n%s\nwant\n%s", out, snap)
	}
	for _, args := range [][]string{
		{"read", path, fixtureToken, "http://127.0.0.1:8765", "3600000", now},
		{"read", path, "another-token", fixtureURL, "3600000", now},
		{"read", path, fixtureToken, fixtureURL, "1000", now},
	} {
		if out := refCache(t, args...); string(bytes.TrimSpace(out)) != "null" {
			t.Errorf("reference read with %v = %s, want null", args[2:5], out)
		}
	}
}

// TestInteropWeReadReferenceCache: a cache file the reference writes now
// (not only the committed fixture) reads back to its snapshot.
func TestInteropWeReadReferenceCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth-broker-snapshot.enc")
	refCache(t, "write", path, fixtureToken, fixtureURL, "testdata/snapshot.json")
	c := &remote.Cache{Path: path, Token: fixtureToken, URL: fixtureURL, TTL: time.Hour,
		Now: func() time.Time { return time.UnixMilli(fixtureGenAt + 1) }}
	snap, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Credentials) != 3 || snap.Credentials[0].Credential.Access != "sk-ant-oat01-fixture-access" {
		t.Fatalf("snapshot = %+v", snap)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("reference cache mode %v, %v", fi, err)
	}
}
