package remote_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// The fixture testdata/ref-v2.enc was written by the reference
// implementation's own writeAuthBrokerSnapshotCache (18.1.21) from
// testdata/snapshot.json, with fixtureToken and fixtureURL:
//
//	OMP_INTEROP_REF=.interop .interop/node_modules/@oven/bun-linux-x64/bin/bun \
//	  scripts/snapcache-ref.ts write pkg/vault/remote/testdata/ref-v2.enc \
//	  fixture-broker-token http://127.0.0.1:8765/ pkg/vault/remote/testdata/snapshot.json
const (
	fixtureToken = "fixture-broker-token"
	fixtureURL   = "http://127.0.0.1:8765/" // as resolved: the trailing slash is bound too
	fixtureGenAt = 1765000000000            // generatedAt of snapshot.json
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixtureCache is a cache over a copy of the reference's file at now.
func fixtureCache(t *testing.T, now int64) *remote.Cache {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth-broker-snapshot.enc")
	if err := os.WriteFile(path, readFile(t, "testdata/ref-v2.enc"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &remote.Cache{Path: path, Token: fixtureToken, URL: fixtureURL, TTL: time.Hour,
		Now: func() time.Time { return time.UnixMilli(now) }}
}

// TestReadsReferenceCache: a cache file the reference wrote opens to the
// exact JSON it was given and decodes with every field, extras included.
func TestReadsReferenceCache(t *testing.T) {
	pt, err := seal.OpenSnapshotCache(readFile(t, "testdata/ref-v2.enc"), fixtureToken, fixtureURL)
	if err != nil {
		t.Fatal(err)
	}
	if want := compact(t, readFile(t, "testdata/snapshot.json")); !bytes.Equal(pt, want) {
		t.Fatalf("plaintext\n%s\nwant\n%s", pt, want)
	}
	snap, err := fixtureCache(t, fixtureGenAt+time.Minute.Milliseconds()).Read()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Generation != 1765000000123 || snap.GeneratedAt != fixtureGenAt || snap.ServerNowMs != 1765000000004 ||
		!snap.Refresher.Enabled || snap.Refresher.NextSweepInMs != 41234 || len(snap.Credentials) != 3 {
		t.Fatalf("snapshot = %+v", snap)
	}
	a, k, c := snap.Credentials[0], snap.Credentials[1], snap.Credentials[2]
	if a.ID != 3 || a.Provider != "anthropic" || a.Credential.Access != "sk-ant-oat01-fixture-access" ||
		a.Credential.Refresh != "__remote__" || a.IdentityKey != "email:cache@example.com" ||
		a.RotatesInMs == nil || *a.RotatesInMs != 3341234 || string(a.Credential.Extra["orgId"]) != `"org-fixture"` {
		t.Errorf("anthropic entry = %+v", a)
	}
	if k.ID != 5 || k.Credential.Key != "sk-fixture-key" || k.IdentityKey != "" || k.RotatesInMs != nil {
		t.Errorf("api key entry = %+v", k)
	}
	if c.ID != 8 || c.Credential.AccountID != "acct-fixture" {
		t.Errorf("codex entry = %+v", c)
	}
}

func TestCacheMisses(t *testing.T) {
	ttl := time.Hour.Milliseconds()
	tests := []struct {
		name  string
		setup func(c *remote.Cache)
		want  error
	}{
		{"fresh at the edge of the TTL", func(c *remote.Cache) { c.Now = func() time.Time { return time.UnixMilli(fixtureGenAt + ttl) } }, nil},
		{"stale one millisecond later", func(c *remote.Cache) {
			c.Now = func() time.Time { return time.UnixMilli(fixtureGenAt + ttl + 1) }
		}, remote.ErrCacheStale},
		{"TTL 0 disables", func(c *remote.Cache) { c.TTL = 0 }, remote.ErrCacheDisabled},
		{"another token", func(c *remote.Cache) { c.Token += "2" }, remote.ErrCacheUnreadable},
		{"another URL", func(c *remote.Cache) { c.URL = strings.TrimSuffix(c.URL, "/") }, remote.ErrCacheUnreadable},
		{"missing", func(c *remote.Cache) { c.Path += ".gone" }, remote.ErrCacheAbsent},
		{"corrupt", func(c *remote.Cache) {
			b, _ := os.ReadFile(c.Path)
			b[len(b)/2] ^= 0x80
			os.WriteFile(c.Path, b, 0o600)
		}, remote.ErrCacheUnreadable},
		{"truncated", func(c *remote.Cache) { os.WriteFile(c.Path, []byte("OMPS\x02short"), 0o600) }, remote.ErrCacheUnreadable},
		{"not a snapshot", func(c *remote.Cache) {
			b, _ := seal.SealSnapshotCache([]byte(`{"generation":"7","generatedAt":1765000000000,"serverNowMs":1,"refresher":{},"credentials":[]}`), c.Token, c.URL)
			os.WriteFile(c.Path, b, 0o600)
		}, remote.ErrCacheInvalid},
		{"not JSON", func(c *remote.Cache) {
			b, _ := seal.SealSnapshotCache([]byte(`{"generation":`), c.Token, c.URL)
			os.WriteFile(c.Path, b, 0o600)
		}, remote.ErrCacheInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fixtureCache(t, fixtureGenAt)
			tt.setup(c)
			_, err := c.Read()
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Read: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestCacheWrite: the file is the snapshot as received (a stream frame's
// kind dropped, extras and blocks kept), 0600 in a 0700 directory, written
// through a temp file that does not survive; stale temp files of killed
// writers are swept, live ones kept.
func TestCacheWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c := &remote.Cache{Path: filepath.Join(dir, "auth-broker-snapshot.enc"), Token: "tok", URL: "http://b:1", TTL: time.Hour,
		Now: func() time.Time { return time.UnixMilli(fixtureGenAt) }}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, live := c.Path+".99.0123456789abcdef.tmp", c.Path+".98.0123456789abcdef.tmp"
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}

	snap := compact(t, readFile(t, "testdata/snapshot.json"))
	frame := append([]byte(`{"kind":"snapshot",`), snap[1:]...)
	if err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(c.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode: %v, %v", fi, err)
	}
	pt, err := seal.OpenSnapshotCache(readFile(t, c.Path), "tok", "http://b:1")
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	json.Unmarshal(pt, &got)
	json.Unmarshal(snap, &want)
	if bytes.Contains(pt, []byte(`"kind"`)) || !jsonEqual(got, want) {
		t.Fatalf("plaintext %s\nwant the snapshot as received without kind", pt)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale temp file not swept")
	}
	if _, err := os.Stat(live); err != nil {
		t.Error("a recent temp file (a live writer's) was removed")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory holds %d files, want the cache and the live temp file", len(ents))
	}
	// A body (GET /v1/snapshot) is kept byte for byte, compacted.
	if err := c.Write(readFile(t, "testdata/snapshot.json")); err != nil {
		t.Fatal(err)
	}
	if pt, _ := seal.OpenSnapshotCache(readFile(t, c.Path), "tok", "http://b:1"); !bytes.Equal(pt, snap) {
		t.Fatalf("plaintext of a body\n%s\nwant\n%s", pt, snap)
	}
	if _, err := c.Read(); err != nil {
		t.Fatalf("Read after Write: %v", err)
	}

	fresh := &remote.Cache{Path: filepath.Join(t.TempDir(), "new", "c.enc"), Token: "tok", URL: "u", TTL: time.Hour}
	if err := fresh.Write(snap); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(fresh.Path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created cache dir mode: %v, %v", fi, err)
	}
	off := &remote.Cache{Path: filepath.Join(t.TempDir(), "off.enc"), Token: "tok", URL: "u"}
	if err := off.Write(snap); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(off.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("TTL 0 wrote a cache file")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// FuzzDecodeCache: no input panics the decoder. sealed=true seals the
// input first, so the fuzzer reaches the snapshot decoding behind the
// authentication; a snapshot that decodes has its required fields.
func FuzzDecodeCache(f *testing.F) {
	ref, err := os.ReadFile("testdata/ref-v2.enc")
	if err != nil {
		f.Fatal(err)
	}
	snap, err := os.ReadFile("testdata/snapshot.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref, false)
	f.Add(snap, true)
	f.Add([]byte(`{"generation":1,"generatedAt":2,"serverNowMs":3,"refresher":{"enabled":false,"intervalMs":0,"skewMs":0,"nextSweepInMs":0},"credentials":[]}`), true)
	f.Add([]byte("OMPS\x01"), false)
	f.Add([]byte(`{"credentials":[{"id":1e400}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, sealed bool) {
		if sealed {
			var err error
			if data, err = seal.SealSnapshotCache(data, fixtureToken, fixtureURL); err != nil {
				t.Fatal(err)
			}
		}
		s, err := remote.DecodeCache(data, fixtureToken, fixtureURL)
		if err != nil {
			if !errors.Is(err, remote.ErrCacheUnreadable) && !errors.Is(err, remote.ErrCacheInvalid) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if s.Credentials == nil {
			t.Fatal("decoded snapshot without a credentials array")
		}
		for _, e := range s.Credentials {
			if e.Provider == "" {
				t.Fatal("decoded entry without a provider")
			}
		}
	})
}
