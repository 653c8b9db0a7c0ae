package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Prepared statements cached per driver connection, for write paths that
// run the same few fixed-shape statements many times per transaction (the
// observed-usage upserts). database/sql caches statements per connection
// only for a *sql.Stmt used through a *sql.Tx; the group commit holds a
// *sql.Conn with its own BEGIN IMMEDIATE, so the cache works one level
// down: on the driver connection, reached with (*sql.Conn).Raw. Preparing
// once per connection instead of once per call removes SQLite's parser
// from the hot path, and executing on the driver statement skips
// database/sql's per-call argument conversion.
//
// The pool keeps its connections until the Store closes (MaxIdleConns =
// MaxOpenConns, no lifetime), so the cache only grows to (connections ×
// statements); Store.Close finalises the statements of every connection
// that is still open before closing the pool.

// stmtCache maps a driver connection to its prepared statements by query.
type stmtCache struct {
	mu sync.Mutex
	m  map[driver.Conn]map[string]driver.Stmt
}

// prepared returns dc's statement for query, preparing it on first use.
// Callers hold dc through (*sql.Conn).Raw, so no other goroutine uses it.
func (c *stmtCache) prepared(ctx context.Context, dc driver.Conn, query string) (driver.Stmt, error) {
	c.mu.Lock()
	st := c.m[dc][query]
	c.mu.Unlock()
	if st != nil {
		return st, nil
	}
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, errors.New("sqlite driver cannot prepare with a context")
	}
	st, err := pc.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[driver.Conn]map[string]driver.Stmt{}
	}
	if c.m[dc] == nil {
		c.m[dc] = map[string]driver.Stmt{}
	}
	c.m[dc][query] = st
	c.mu.Unlock()
	return st, nil
}

// close finalises the statements of every connection still open; a
// connection the pool already closed (a bad connection) is skipped, its
// statements went with it.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dc, stmts := range c.m {
		if v, ok := dc.(driver.Validator); ok && !v.IsValid() {
			continue
		}
		for _, st := range stmts {
			st.Close()
		}
	}
	c.m = nil
}

// rawConn is one driver connection held through (*sql.Conn).Raw, with the
// Store's statement cache: the cached exec and query helpers.
type rawConn struct {
	ctx   context.Context
	dc    driver.Conn
	cache *stmtCache
	args  []driver.NamedValue // reused between calls
}

// withRaw runs fn on conn's driver connection.
func (s *Store) withRaw(ctx context.Context, conn *sql.Conn, fn func(rc *rawConn) error) error {
	return conn.Raw(func(dc any) error {
		d, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("sqlite driver connection is a %T", dc)
		}
		return fn(&rawConn{ctx: ctx, dc: d, cache: &s.stmts})
	})
}

// bind fills the reused argument slice.
func (rc *rawConn) bind(args []any) []driver.NamedValue {
	rc.args = rc.args[:0]
	for i, a := range args {
		rc.args = append(rc.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return rc.args
}

// exec runs the cached statement query with args (int64, float64, string
// or nil values) and returns the rows it changed.
func (rc *rawConn) exec(query string, args ...any) (int64, error) {
	st, err := rc.cache.prepared(rc.ctx, rc.dc, query)
	if err != nil {
		return 0, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(rc.ctx, rc.bind(args))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs the cached statement query with args and calls row for each
// result row; the values slice is reused between rows.
func (rc *rawConn) query(query string, row func(vals []driver.Value) error, args ...any) error {
	st, err := rc.cache.prepared(rc.ctx, rc.dc, query)
	if err != nil {
		return err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(rc.ctx, rc.bind(args))
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(vals); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := row(vals); err != nil {
			return err
		}
	}
}

// asInt64 and asString read driver values of INTEGER and TEXT columns.
func asInt64(v driver.Value) int64 {
	n, _ := v.(int64)
	return n
}

func asString(v driver.Value) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}
