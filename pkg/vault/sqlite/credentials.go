package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
)

// Sealed columns of auth_credentials, in the order of credCols.
var sealedCols = [...]string{"access", "refresh", "api_key", "extra"}

const credCols = `id, provider, credential_type, disabled_cause, identity_key, expires, email, account_id,
	project_id, enterprise_url, access, refresh, api_key, extra, created_at, updated_at`

// errUnparsable marks a row whose data cannot be turned into a credential;
// reads skip such rows (reference behaviour) with a warning.
var errUnparsable = errors.New("credential data does not parse")

// BlobError reports a sealed column that cannot be opened: a wrong or
// retired key, or a blob moved or tampered with. It names the row, never a
// secret.
type BlobError struct {
	Table  string
	Row    string
	Column string
	Err    error // wraps seal.ErrMalformed, seal.ErrUnknownKey or seal.ErrAuth
}

func (e *BlobError) Error() string {
	return fmt.Sprintf("vault %s row %s column %s cannot be opened (wrong or retired key, or damaged data): %v", e.Table, e.Row, e.Column, e.Err)
}

// Unwrap returns the seal error.
func (e *BlobError) Unwrap() error { return e.Err }

// credAAD is the additional data binding a sealed column to its row.
func credAAD(id int64, col string) []byte {
	return []byte("auth_credentials/" + strconv.FormatInt(id, 10) + "/" + col)
}

// rawRow is one auth_credentials row as stored.
type rawRow struct {
	id                                         int64
	provider, ctype                            string
	cause, ident                               sql.NullString
	expires                                    int64
	email, accountID, projectID, enterpriseURL string
	blobs                                      [len(sealedCols)][]byte
	created, updated                           int64
}

func scanRow(sc interface{ Scan(...any) error }) (rawRow, error) {
	var r rawRow
	err := sc.Scan(&r.id, &r.provider, &r.ctype, &r.cause, &r.ident, &r.expires, &r.email, &r.accountID,
		&r.projectID, &r.enterpriseURL, &r.blobs[0], &r.blobs[1], &r.blobs[2], &r.blobs[3], &r.created, &r.updated)
	return r, err
}

// decode unseals a row into a record. Seal failures are *BlobError; data
// that does not form a credential is errUnparsable.
func decode(kr *seal.Keyring, r rawRow) (vault.Record, error) {
	var pt [len(sealedCols)][]byte
	for i, col := range sealedCols {
		b, err := kr.Open(r.blobs[i], credAAD(r.id, col))
		if err != nil {
			return vault.Record{}, &BlobError{Table: "auth_credentials", Row: strconv.FormatInt(r.id, 10), Column: col, Err: err}
		}
		pt[i] = b
	}
	return assemble(r, pt)
}

// assemble builds the record of row r from its unsealed columns pt. The
// write path uses it too, so the active set holds exactly what a read of
// the row would return.
func assemble(r rawRow, pt [len(sealedCols)][]byte) (vault.Record, error) {
	rec := vault.Record{
		ID:            r.id,
		Provider:      r.provider,
		IdentityKey:   r.ident.String,
		DisabledCause: r.cause.String,
		CreatedAt:     time.UnixMilli(r.created),
		UpdatedAt:     time.UnixMilli(r.updated),
	}
	if r.cause.Valid && rec.DisabledCause == "" {
		rec.DisabledCause = vault.CauseDisabled
	}
	c := vault.Credential{Type: vault.CredentialType(r.ctype)}
	switch c.Type {
	case vault.TypeOAuth:
		c.Access, c.Refresh = string(pt[0]), string(pt[1])
		c.Expires, c.Email, c.AccountID, c.ProjectID, c.EnterpriseURL = r.expires, r.email, r.accountID, r.projectID, r.enterpriseURL
		if len(pt[3]) > 0 {
			if err := json.Unmarshal(pt[3], &c.Extra); err != nil {
				return vault.Record{}, fmt.Errorf("row %d: extra: %w", r.id, errUnparsable)
			}
		}
	case vault.TypeAPIKey:
		c.Key = string(pt[2])
		if len(pt[3]) > 0 {
			var x struct {
				Source string `json:"source"`
			}
			if err := json.Unmarshal(pt[3], &x); err != nil {
				return vault.Record{}, fmt.Errorf("row %d: extra: %w", r.id, errUnparsable)
			}
			c.Source = x.Source
		}
	default:
		return vault.Record{}, fmt.Errorf("row %d: unknown credential_type: %w", r.id, errUnparsable)
	}
	rec.Credential = c
	return rec, nil
}

// queryRecords runs a SELECT of credCols and decodes every row, skipping
// unparsable rows with a warning and failing on a row that cannot be opened.
func (s *Store) queryRecords(ctx context.Context, q querier, query string, args ...any) ([]vault.Record, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("query credentials: %w", err)
	}
	defer rows.Close()
	kr := s.keyring()
	var out []vault.Record
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("scan credential: %w", err)
		}
		rec, err := decode(kr, r)
		if err != nil && s.reloadForRead(ctx, err, r.blobs[:]...) {
			kr = s.keyring()
			rec, err = decode(kr, r)
		}
		if errors.Is(err, errUnparsable) {
			s.log.Warn("vault: skipping credential row that does not parse", slog.Int64("id", r.id), slog.String("provider", r.provider), slog.Any("err", err))
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query credentials: %w", err)
	}
	return out, nil
}

// List returns the active records of provider ("" = all), by id, from the
// in-memory active set (reloaded first when another process changed the
// vault). The records are copies the caller may keep and modify.
func (s *Store) List(ctx context.Context, provider string) ([]vault.Record, error) {
	es, err := s.activeEntries(ctx, provider)
	if err != nil {
		return nil, err
	}
	return s.resolveAll(ctx, es)
}

// activeEntries returns the active set's entries of provider ("" = all),
// by id, in a slice of their own; the entries themselves never change.
func (s *Store) activeEntries(ctx context.Context, provider string) ([]*entry, error) {
	var es []*entry
	err := s.readActive(ctx, func(a *activeSet) {
		if provider != "" {
			es = slices.Clone(a.byProv[provider])
		} else {
			es = slices.Clone(a.all)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	return es, nil
}

// Walk calls fn with each active record of provider ("" = all), by id,
// without copying them: fn sees the active set's own records (a row whose
// sealed columns did not open is decoded again, as List does). The entry
// pointers are collected under the lock and fn runs after it is released:
// entries are immutable, so fn needs no lock.
func (s *Store) Walk(ctx context.Context, provider string, fn func(r *vault.Record)) error {
	es, err := s.activeEntries(ctx, provider)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.err == nil {
			fn(&e.rec)
			continue
		}
		rec, err := s.resolve(ctx, e)
		if errors.Is(err, errUnparsable) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list credentials: %w", err)
		}
		fn(&rec)
	}
	return nil
}

// ListDisabled returns the disabled (soft-deleted) records of provider
// ("" = all), by id. It exists for CLI listings.
func (s *Store) ListDisabled(ctx context.Context, provider string) ([]vault.Record, error) {
	return s.queryRecords(ctx, s.db, "SELECT "+credCols+" FROM auth_credentials WHERE disabled_cause IS NOT NULL AND (?1 = '' OR provider = ?1) ORDER BY id", provider)
}

// Get returns record id, active or not. ENOTFOUND if there is no such row;
// a row that does not parse is an error too.
//
// An active row comes from the in-memory active set; a disabled one from
// the database.
func (s *Store) Get(ctx context.Context, id int64) (vault.Record, error) {
	var e *entry
	if err := s.readActive(ctx, func(a *activeSet) { e = a.byID[id] }); err != nil {
		return vault.Record{}, fmt.Errorf("get credential %d: %w", id, err)
	}
	if e != nil {
		return s.resolve(ctx, e)
	}
	return s.decodeOne(ctx, id, s.stmtGet.QueryRowContext(ctx, id))
}

func (s *Store) get(ctx context.Context, q querier, id int64) (vault.Record, error) {
	return s.decodeOne(ctx, id, q.QueryRowContext(ctx, "SELECT "+credCols+" FROM auth_credentials WHERE id = ?", id))
}

func (s *Store) decodeOne(ctx context.Context, id int64, row *sql.Row) (vault.Record, error) {
	r, err := scanRow(row)
	if errors.Is(err, sql.ErrNoRows) {
		return vault.Record{}, vault.NotFoundID(id)
	}
	if err != nil {
		return vault.Record{}, fmt.Errorf("get credential %d: %w", id, err)
	}
	rec, err := decode(s.keyring(), r)
	if err != nil && s.reloadForRead(ctx, err, r.blobs[:]...) {
		rec, err = decode(s.keyring(), r)
	}
	return rec, err
}

// rowIdentity is the identity a stored row matches on: its stored identity
// key trimmed, or recomputed from the credential when none is stored.
func rowIdentity(r vault.Record) string {
	if k := strings.TrimSpace(r.IdentityKey); k != "" {
		return k
	}
	return vault.IdentityKey(r.Provider, r.Credential)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// insertTx inserts a row for provider and then writes its data (the sealed
// columns need the id for their additional data), all inside tx. id 0 lets
// SQLite assign the next id.
func (s *Store) insertTx(ctx context.Context, tx *wtx, id int64, provider string, c vault.Credential, ident, cause string, created, updated int64) (int64, error) {
	if err := vault.CheckType(c.Type); err != nil {
		return 0, err
	}
	var idArg any
	if id > 0 {
		idArg = id
	}
	err := tx.QueryRowContext(ctx, `INSERT INTO auth_credentials (id, provider, credential_type, disabled_cause, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, idArg, provider, string(c.Type), nullable(cause), created, updated).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert credential: %w", err)
	}
	return id, s.writeDataTx(ctx, tx, id, c, ident, updated)
}

// writeDataTx fully replaces the data of row id (fields absent from c are
// cleared) with freshly sealed secrets, and records the row's new state in
// the batch's view of the active set. Every credential write ends here, so
// it refuses a type the vault does not store whatever its caller checked.
func (s *Store) writeDataTx(ctx context.Context, tx *wtx, id int64, c vault.Credential, ident string, updated int64) error {
	if err := vault.CheckType(c.Type); err != nil {
		return err
	}
	var extra []byte
	switch {
	case c.Type == vault.TypeOAuth && len(c.Extra) > 0:
		var err error
		if extra, err = json.Marshal(c.Extra); err != nil {
			return vault.Errorf(vault.EINVALID, "credential extra fields are not valid JSON")
		}
	case c.Type == vault.TypeAPIKey && c.Source != "":
		extra, _ = json.Marshal(map[string]string{"source": c.Source})
	}
	kr := s.keyring()
	r := rawRow{id: id, ctype: string(c.Type), expires: c.Expires, email: c.Email, accountID: c.AccountID,
		projectID: c.ProjectID, enterpriseURL: c.EnterpriseURL, updated: updated}
	pt := [len(sealedCols)][]byte{[]byte(c.Access), []byte(c.Refresh), []byte(c.Key), extra}
	for i := range pt {
		b, err := kr.Seal(pt[i], credAAD(id, sealedCols[i]))
		if err != nil {
			return fmt.Errorf("seal credential %d: %w", id, err)
		}
		r.blobs[i] = b
	}
	err := tx.QueryRowContext(ctx, `UPDATE auth_credentials SET credential_type = ?, identity_key = ?, expires = ?, email = ?,
		account_id = ?, project_id = ?, enterprise_url = ?, access = ?, refresh = ?, api_key = ?, extra = ?, updated_at = ?
		WHERE id = ? RETURNING provider, disabled_cause, identity_key, created_at`, string(c.Type), nullable(ident), c.Expires, c.Email,
		c.AccountID, c.ProjectID, c.EnterpriseURL, r.blobs[0], r.blobs[1], r.blobs[2], r.blobs[3], updated, id).
		Scan(&r.provider, &r.cause, &r.ident, &r.created)
	if errors.Is(err, sql.ErrNoRows) {
		return vault.NotFoundID(id)
	}
	if err != nil {
		return fmt.Errorf("write credential %d: %w", id, err)
	}
	if r.cause.Valid {
		tx.v.set(id, nil)
		return nil
	}
	rec, err := assemble(r, pt)
	if err != nil {
		s.log.Warn("vault: written credential does not read back", slog.Int64("id", id), slog.Any("err", err))
		tx.v.set(id, nil)
		tx.v.reload = true
		return nil
	}
	tx.v.set(id, newEntry(rec))
	return nil
}
