package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// ReadReference reads every credential row (active and disabled) of a plain
// reference agent.db, auth schema versions 0–8 (versions 5–7 only add tables
// beside auth_credentials; 8 only renames providers), opened read-only. Rows
// of the retired provider "singularityapi" come out as the reference's
// version 8 migration names them (singularityProvider). A v0 boolean `disabled` column
// becomes cause "disabled"; a missing or NULL identity_key is computed with
// vault.IdentityKey (18.1.21 rule); every OAuth data key (orgId, MCP
// tokenUrl, …) and an API key's source "login" are kept; an empty stored
// cause becomes "disabled"; rows whose data does not parse are skipped
// (reference behaviour). Timestamps are seconds in the reference.
func ReadReference(ctx context.Context, path string) ([]vault.Record, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read reference vault: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("read reference vault: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("read reference vault: %w", err)
	}
	defer db.Close()
	recs, err := readReference(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read reference vault %s: %w", abs, err)
	}
	return recs, nil
}

func readReference(ctx context.Context, db *sql.DB) ([]vault.Record, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info('auth_credentials')")
	if err != nil {
		return nil, err
	}
	cols := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		cols[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, errors.New("no auth_credentials table (not an agent.db?)")
	}
	for _, c := range []string{"id", "provider", "credential_type", "data"} {
		if !cols[c] {
			return nil, fmt.Errorf("auth_credentials has no %s column (unknown layout)", c)
		}
	}
	cause, ident, created, updated := "NULL", "NULL", "0", "0"
	switch {
	case cols["disabled_cause"]:
		cause = "disabled_cause"
	case cols["disabled"]: // v0
		cause = "CASE WHEN disabled THEN 'disabled' END"
	}
	if cols["identity_key"] { // v3+
		ident = "identity_key"
	}
	if cols["created_at"] {
		created = "created_at"
	}
	if cols["updated_at"] {
		updated = "updated_at"
	}
	rows, err = db.QueryContext(ctx, fmt.Sprintf(`SELECT id, provider, credential_type, data, %s, %s, %s, %s
		FROM auth_credentials ORDER BY id`, cause, ident, created, updated))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []vault.Record
	for rows.Next() {
		var (
			r                    vault.Record
			ctype, data          string
			cause, ident         sql.NullString
			createdAt, updatedAt sql.NullInt64
		)
		if err := rows.Scan(&r.ID, &r.Provider, &ctype, &data, &cause, &ident, &createdAt, &updatedAt); err != nil {
			return nil, err
		}
		c, err := parseReferenceData(ctype, data)
		if err != nil {
			continue
		}
		r.Credential = c
		if r.Provider == "singularityapi" {
			r.Provider = singularityProvider(c)
		}
		if cause.Valid {
			r.DisabledCause = normalizeCause(cause.String)
		}
		if r.IdentityKey = strings.TrimSpace(ident.String); r.IdentityKey == "" {
			r.IdentityKey = vault.IdentityKey(r.Provider, c)
		}
		r.CreatedAt, r.UpdatedAt = referenceTime(createdAt.Int64), referenceTime(updatedAt.Int64)
		out = append(out, r)
	}
	return out, rows.Err()
}

// referenceTime converts a reference timestamp (seconds; milliseconds are
// tolerated) to a time; 0 is the zero time.
func referenceTime(v int64) time.Time {
	switch {
	case v <= 0:
		return time.Time{}
	case v > 100_000_000_000: // later than year 5138 in seconds: must be ms
		return time.UnixMilli(v)
	}
	return time.Unix(v, 0)
}

// parseReferenceData decodes the reference `data` JSON: {"key":…} for API
// keys, the credential without "type" for OAuth.
func parseReferenceData(ctype, data string) (vault.Credential, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil || m == nil {
		return vault.Credential{}, errUnparsable
	}
	switch vault.CredentialType(ctype) {
	case vault.TypeAPIKey:
		var key string
		if err := json.Unmarshal(m["key"], &key); err != nil {
			return vault.Credential{}, errUnparsable
		}
		c := vault.Credential{Type: vault.TypeAPIKey, Key: key}
		if string(m["source"]) == `"login"` { // any other value is dropped, as the reference does
			c.Source = vault.SourceLogin
		}
		return c, nil
	case vault.TypeOAuth:
		m["type"] = json.RawMessage(`"oauth"`)
		b, err := json.Marshal(m)
		if err != nil {
			return vault.Credential{}, errUnparsable
		}
		var c vault.Credential
		if err := c.UnmarshalJSON(b); err != nil {
			return vault.Credential{}, errUnparsable
		}
		return c, nil
	}
	return vault.Credential{}, errUnparsable
}

// singularityProvider names the provider a row of the retired
// "singularityapi" belongs to: an API key starting "sk-sapi-" is
// SingularityAPI's developer platform ("singularityapi-dev"), anything else
// its reserved lanes ("singularityapi-tech").
func singularityProvider(c vault.Credential) string {
	if strings.HasPrefix(c.Key, "sk-sapi-") {
		return "singularityapi-dev"
	}
	return "singularityapi-tech"
}

// ImportRecords writes recs (e.g. from ReadReference) in one transaction, in
// id order. A record whose id is above every id this vault ever assigned is
// inserted with its id, cause, identity key and timestamps preserved, so
// client caches keep working and ids are still never reused. Any other
// active record is upserted by identity (as Upsert, without Validate, so
// imported rows are kept as they are); any other disabled record is skipped.
// It returns how many records it wrote. EINVALID for a record without a
// provider or with an unknown credential type.
func (s *Store) ImportRecords(ctx context.Context, recs []vault.Record) (int, error) {
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b vault.Record) int { return cmp.Compare(a.ID, b.ID) })
	for _, r := range sorted {
		if strings.TrimSpace(r.Provider) == "" {
			return 0, vault.Errorf(vault.EINVALID, "record %d: provider must be a non-empty string", r.ID)
		}
		if err := vault.CheckType(r.Credential.Type); err != nil {
			return 0, vault.Errorf(vault.EINVALID, "record %d: %s", r.ID, vault.ErrorMessage(err))
		}
	}
	n := 0
	_, err := s.update(ctx, true, func(ctx context.Context, tx *wtx) (bool, error) {
		n = 0
		var seq int64
		err := tx.QueryRowContext(ctx, `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'auth_credentials'), 0),
			coalesce((SELECT max(id) FROM auth_credentials), 0))`).Scan(&seq)
		if err != nil {
			return false, err
		}
		now := s.nowMs()
		for _, r := range sorted {
			switch {
			case r.ID > seq:
				ident := strings.TrimSpace(r.IdentityKey)
				if ident == "" {
					ident = vault.IdentityKey(r.Provider, r.Credential)
				}
				cause := ""
				if !r.Active() {
					cause = normalizeCause(r.DisabledCause)
				}
				created, updated := msOr(r.CreatedAt, now), msOr(r.UpdatedAt, now)
				if _, err := s.insertTx(ctx, tx, r.ID, r.Provider, r.Credential, ident, cause, created, updated); err != nil {
					return false, err
				}
				seq = r.ID
			case r.Active():
				if err := s.upsertTx(ctx, tx, r.Provider, r.Credential); err != nil {
					return false, err
				}
			default:
				continue
			}
			n++
		}
		return n > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("import credentials: %w", err)
	}
	return n, nil
}

func msOr(t time.Time, def int64) int64 {
	if t.IsZero() {
		return def
	}
	return t.UnixMilli()
}

// IsReference reports whether the existing database at path is a plain
// reference agent.db (auth tables, no Go vault schema), without a key and
// without writing anything: callers can pick ReadReference over Open
// before they load or create a vault key.
func IsReference(ctx context.Context, path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(abs); err != nil {
		return false, err
	}
	db, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return false, err
	}
	defer db.Close()
	var v, n int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("inspect %s: %w", abs, err)
	}
	if v != 0 {
		return false, nil
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name IN ('auth_credentials','auth_schema_version')").Scan(&n); err != nil {
		return false, fmt.Errorf("inspect %s: %w", abs, err)
	}
	return n > 0, nil
}
