package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// Prepared statements for one call on a driver connection, for write paths
// that run the same few fixed-shape statements many times per transaction
// (the observed-usage upserts). database/sql caches statements only for a
// *sql.Stmt used through a *sql.Tx; the group commit holds a *sql.Conn
// with its own BEGIN IMMEDIATE, so the statements live one level down: on
// the driver connection, reached with (*sql.Conn).Raw. Each query is
// prepared once per call instead of once per row, and executing on the
// driver statement skips database/sql's per-call argument conversion.
//
// They are finalised when the call returns. Keeping them per connection
// across calls would save the few prepares of a report, but the pool
// closes a connection that went bad (an interrupted statement, a
// panic) without telling us, and an unfinalised statement keeps a closed
// SQLite connection alive as a zombie with its file descriptors.

// rawConn is one driver connection held through (*sql.Conn).Raw, with the
// statements prepared during the call: the exec and query helpers.
type rawConn struct {
	ctx   context.Context
	dc    driver.Conn
	stmts map[string]driver.Stmt
	args  []driver.NamedValue // reused between calls
}

// withRaw runs fn on conn's driver connection and finalises the statements
// fn prepared, whatever fn returns (or if it panics).
func (s *Store) withRaw(ctx context.Context, conn *sql.Conn, fn func(rc *rawConn) error) error {
	return conn.Raw(func(dc any) error {
		d, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("sqlite driver connection is a %T", dc)
		}
		rc := &rawConn{ctx: ctx, dc: d}
		defer rc.close()
		return fn(rc)
	})
}

// prepared returns the call's statement for query, preparing it on first
// use.
func (rc *rawConn) prepared(query string) (driver.Stmt, error) {
	if st := rc.stmts[query]; st != nil {
		return st, nil
	}
	pc, ok := rc.dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, errors.New("sqlite driver cannot prepare with a context")
	}
	st, err := pc.PrepareContext(rc.ctx, query)
	if err != nil {
		return nil, err
	}
	if rc.stmts == nil {
		rc.stmts = map[string]driver.Stmt{}
	}
	rc.stmts[query] = st
	return st, nil
}

// close finalises the statements of the call.
func (rc *rawConn) close() {
	for _, st := range rc.stmts {
		st.Close()
	}
}

// bind fills the reused argument slice.
func (rc *rawConn) bind(args []any) []driver.NamedValue {
	rc.args = rc.args[:0]
	for i, a := range args {
		rc.args = append(rc.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	return rc.args
}

// exec runs the statement query with args (int64, float64, string
// or nil values) and returns the rows it changed.
func (rc *rawConn) exec(query string, args ...any) (int64, error) {
	st, err := rc.prepared(query)
	if err != nil {
		return 0, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(rc.ctx, rc.bind(args))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query runs the statement query with args and calls row for each
// result row; the values slice is reused between rows.
func (rc *rawConn) query(query string, row func(vals []driver.Value) error, args ...any) error {
	st, err := rc.prepared(query)
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
