package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// capPages sets PRAGMA max_page_count on every connection of the store's
// pool to the database's current size (or unlimited with 0), so a write
// that needs a new page fails with a real SQLITE_FULL.
func capPages(t *testing.T, s *Store, limit bool) {
	t.Helper()
	ctx := context.Background()
	var conns []interface{ Close() error }
	for range maxOpenConns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		n := int64(1 << 30)
		if limit {
			if err := c.QueryRowContext(ctx, "PRAGMA page_count").Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.FormatInt(n, 10)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

func TestDiskFullIsUnavailableAndLeavesVaultUnchanged(t *testing.T) {
	ctx := context.Background()
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), kr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", Email: "a@x.io"}
	if _, err := s.Upsert(ctx, "anthropic", a); err != nil {
		t.Fatal(err)
	}
	before, _ := s.List(ctx, "")
	gen0, _ := s.Generation(ctx)

	capPages(t, s, true)
	// A new credential with a large extra field needs new pages.
	big := vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r2", Email: "b@x.io",
		Extra: map[string]json.RawMessage{"blob": json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 256<<10)) + `"`)}}
	_, err = s.Upsert(ctx, "anthropic", big)
	if vault.ErrorCode(err) != vault.EUNAVAILABLE || vault.ErrorMessage(err) != "vault storage is full" {
		t.Fatalf("Upsert on a full disk = %v (code %q, message %q), want EUNAVAILABLE \"vault storage is full\"",
			err, vault.ErrorCode(err), vault.ErrorMessage(err))
	}
	if !errors.As(err, new(*vault.Error)) {
		t.Fatal("not a *vault.Error")
	}

	// Nothing changed, and reads keep working.
	after, err := s.List(ctx, "")
	if err != nil || len(after) != len(before) || !after[0].Credential.Equal(before[0].Credential) {
		t.Fatalf("List after the failed write = %v, %v; want %v", after, err, before)
	}
	if g, err := s.Generation(ctx); err != nil || g != gen0 {
		t.Fatalf("generation %d, %v after the failed write; want %d", g, err, gen0)
	}
	if rec, err := s.Get(ctx, 1); err != nil || rec.Credential.Refresh != "r1" {
		t.Fatalf("Get(1) = %v, %v", rec.Credential.Refresh, err)
	}
	fresh, err := s.loadSnapshot(ctx) // what a reload reads from disk
	if err != nil || len(fresh.byID) != 1 {
		t.Fatalf("vault on disk holds %d active rows, %v", len(fresh.byID), err)
	}

	// Room again: the same write lands.
	capPages(t, s, false)
	recs, err := s.Upsert(ctx, "anthropic", big)
	if err != nil || len(recs) != 2 {
		t.Fatalf("Upsert after the disk has room = %d records, %v", len(recs), err)
	}
}

func TestStorageErrorClassification(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		msg  string
	}{
		{"enospc from an os call", &fs.PathError{Op: "write", Path: "/vault/v.db", Err: syscall.ENOSPC}, msgStorageFull},
		{"erofs from an os call", &fs.PathError{Op: "open", Path: "/vault/v.db", Err: syscall.EROFS}, msgReadOnly},
		{"other errors pass through", errors.New("boom"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := storageError(tt.err)
			if tt.msg == "" {
				if got != tt.err {
					t.Fatalf("storageError = %v, want the error unchanged", got)
				}
				return
			}
			if vault.ErrorCode(got) != vault.EUNAVAILABLE || vault.ErrorMessage(got) != tt.msg || !errors.Is(got, tt.err) {
				t.Fatalf("storageError = %v (%s), want EUNAVAILABLE %q wrapping the cause", got, vault.ErrorCode(got), tt.msg)
			}
		})
	}
}

func TestReadOnlyVaultIsUnavailable(t *testing.T) {
	ctx := context.Background()
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), kr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var conns []*sql.Conn
	for range maxOpenConns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		// query_only makes every write a real SQLITE_READONLY.
		if _, err := c.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	_, err = s.Upsert(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-A"})
	if vault.ErrorCode(err) != vault.EUNAVAILABLE || vault.ErrorMessage(err) != "vault is read-only" {
		t.Fatalf("Upsert on a read-only vault = %v (code %q)", err, vault.ErrorCode(err))
	}
	if recs, err := s.List(ctx, ""); err != nil || len(recs) != 0 {
		t.Fatalf("List = %v, %v", recs, err)
	}
}
