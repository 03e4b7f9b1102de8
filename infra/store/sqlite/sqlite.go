// Package sqlite is the embedded store: one SQLite file in WAL mode, opened through the pure-Go modernc.org/sqlite
// driver so the binary needs no cgo.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/infra/store/internal/chunks"
	"github.com/deer-go/deer-go/infra/store/internal/commitplan"
	"github.com/deer-go/deer-go/infra/store/internal/cursor"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

const (
	// readers is the size of the read pool; WAL lets readers run beside the single writer.
	readers = 4
	// busyTimeout covers another process (a second server, a backup tool) holding the write lock.
	busyTimeout = 5 * time.Second
	// defaultPage is the Threads page size when the caller gives none.
	defaultPage = 50
	// tsLayout is fixed-width so that timestamps compare correctly as text.
	tsLayout = "2006-01-02T15:04:05.000000000Z"
)

// Store is a store.Store on a SQLite file.
type Store struct {
	path string
	// w has exactly one connection: SQLite allows one writer at a time, and queueing writers in the pool is
	// cheaper and fairer than letting them spin on SQLITE_BUSY.
	w *sql.DB
	r *sql.DB // query_only connections for reads

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path and brings its schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") {
		// Two pools must share one database, so it has to be a plain file name.
		return nil, fmt.Errorf("sqlite: %q is not a plain file path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	// synchronous=NORMAL: in WAL mode a commit is then durable once it is in the WAL, which survives a crash
	// of this process; only a power loss or OS crash can lose the last few commits (never corrupt the file).
	// That is the right trade for an event log written many times a second, whose tail a restarted run
	// redoes anyway; FULL would fsync on every commit.
	common := url.Values{}
	common.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	common.Add("_pragma", "foreign_keys(1)")
	common.Add("_pragma", "synchronous(NORMAL)")

	wq := url.Values{}
	for k, v := range common {
		wq[k] = append([]string(nil), v...)
	}
	wq.Add("_pragma", "journal_mode(WAL)")
	// BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails half-way when it upgrades
	// from reading to writing.
	wq.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	s := &Store{path: path, w: w}
	if err := migrate(ctx, w); err != nil {
		return nil, errors.Join(err, w.Close())
	}

	rq := common
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", path, err), w.Close())
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	if err := r.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", path, err), r.Close(), w.Close())
	}
	s.r = r
	return s, nil
}

// Close closes both pools; it is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// Get returns the checkpoint saved under id.
func (s *Store) Get(ctx context.Context, id string) ([]byte, bool, error) {
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM checkpoints WHERE id = ?`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: get checkpoint %q: %w", id, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, true, nil
}

// Set saves a checkpoint under id, replacing any earlier one.
func (s *Store) Set(ctx context.Context, id string, cp []byte) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		return saveCheckpoint(ctx, tx, id, cp, "", time.Now())
	})
	if err != nil {
		return fmt.Errorf("sqlite: set checkpoint %q: %w", id, err)
	}
	return nil
}

// Commit saves a thread record, events and a checkpoint atomically.
func (s *Store) Commit(ctx context.Context, c store.Commit) error {
	p, err := commitplan.New(c, time.Now())
	if err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	if p.Empty() {
		return nil
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if p.ThreadID != "" {
			if err := commitThread(ctx, tx, p); err != nil {
				return err
			}
		}
		if p.Checkpoint != nil {
			return saveCheckpoint(ctx, tx, p.CheckpointID, p.Checkpoint, p.ThreadID, p.Now)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: commit to thread %q: %w", p.ThreadID, err)
	}
	return nil
}

func commitThread(ctx context.Context, tx *sql.Tx, p commitplan.Plan) error {
	var stored int64
	err := tx.QueryRowContext(ctx, `SELECT last_seq FROM threads WHERE id = ?`, p.ThreadID).Scan(&stored)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read last seq: %w", err)
	}
	if !exists && p.Thread == nil {
		return store.ErrNotFound
	}
	if err := p.Check(stored); err != nil {
		return err
	}
	last := p.LastSeq(stored)
	if th := p.Thread; th != nil {
		_, err := tx.ExecContext(ctx, `
INSERT INTO threads (id, title, status, state, interrupt, error, last_seq, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	title = excluded.title, status = excluded.status, state = excluded.state, interrupt = excluded.interrupt,
	error = excluded.error, last_seq = excluded.last_seq, updated_at = excluded.updated_at`,
			th.ID, th.Title, th.Status, jsonText(th.State), jsonText(th.Interrupt), th.Error, last,
			ts(th.CreatedAt), ts(th.UpdatedAt))
		if err != nil {
			return fmt.Errorf("save thread: %w", err)
		}
	} else if len(p.Events) > 0 {
		_, err := tx.ExecContext(ctx, `UPDATE threads SET last_seq = ?, updated_at = ? WHERE id = ?`,
			last, ts(p.Now), p.ThreadID)
		if err != nil {
			return fmt.Errorf("advance thread: %w", err)
		}
	}
	if len(p.Events) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (thread_id, seq, type, data, at) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare event insert: %w", err)
	}
	for _, e := range p.Events {
		if _, err := stmt.ExecContext(ctx, p.ThreadID, e.Seq, e.Type, []byte(e.Data), ts(e.At)); err != nil {
			return errors.Join(fmt.Errorf("insert event %d: %w", e.Seq, err), stmt.Close())
		}
	}
	if err := stmt.Close(); err != nil {
		return fmt.Errorf("close event insert: %w", err)
	}
	return nil
}

func saveCheckpoint(ctx context.Context, tx *sql.Tx, id string, data []byte, threadID string, now time.Time) error {
	if data == nil {
		data = []byte{}
	}
	var owner any
	if threadID != "" {
		owner = threadID
	}
	// A plain Set knows no thread, so it keeps whatever owner an earlier commit recorded.
	_, err := tx.ExecContext(ctx, `
INSERT INTO checkpoints (id, data, thread_id, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	data = excluded.data, updated_at = excluded.updated_at, thread_id = COALESCE(excluded.thread_id, checkpoints.thread_id)`,
		id, data, owner, ts(now))
	if err != nil {
		return fmt.Errorf("save checkpoint %q: %w", id, err)
	}
	return nil
}

// Thread returns a thread record, or store.ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*store.Thread, error) {
	var (
		th                   store.Thread
		state, interrupt     []byte
		createdAt, updatedAt string
	)
	err := s.r.QueryRowContext(ctx, `
SELECT id, title, status, state, interrupt, error, last_seq, created_at, updated_at FROM threads WHERE id = ?`, id).
		Scan(&th.ID, &th.Title, &th.Status, &state, &interrupt, &th.Error, &th.LastSeq, &createdAt, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: thread %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: thread %q: %w", id, err)
	}
	if th.CreatedAt, err = parseTS(createdAt); err != nil {
		return nil, fmt.Errorf("sqlite: thread %q: %w", id, err)
	}
	if th.UpdatedAt, err = parseTS(updatedAt); err != nil {
		return nil, fmt.Errorf("sqlite: thread %q: %w", id, err)
	}
	th.State, th.Interrupt = state, interrupt
	return &th, nil
}

// Threads lists threads newest first.
func (s *Store) Threads(ctx context.Context, cur string, limit int) ([]store.ThreadSummary, string, error) {
	if limit <= 0 {
		limit = defaultPage
	}
	const cols = `SELECT id, title, status, created_at, updated_at FROM threads `
	const order = ` ORDER BY updated_at DESC, id LIMIT ?`
	var (
		rows *sql.Rows
		err  error
	)
	if cur == "" {
		rows, err = s.r.QueryContext(ctx, cols+order, limit+1)
	} else {
		pos, derr := cursor.Decode(cur)
		if derr != nil {
			return nil, "", fmt.Errorf("sqlite: list threads: %w", derr)
		}
		at := ts(pos.UpdatedAt)
		rows, err = s.r.QueryContext(ctx, cols+`WHERE updated_at < ? OR (updated_at = ? AND id > ?)`+order,
			at, at, pos.ID, limit+1)
	}
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list threads: %w", err)
	}
	page, err := scanSummaries(rows)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list threads: %w", err)
	}
	if len(page) <= limit {
		return page, "", nil
	}
	page = page[:limit]
	last := page[limit-1]
	return page, cursor.Encode(cursor.Position{UpdatedAt: last.UpdatedAt, ID: last.ID}), nil
}

func scanSummaries(rows *sql.Rows) (out []store.ThreadSummary, err error) {
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		var (
			t                    store.ThreadSummary
			createdAt, updatedAt string
		)
		if err := rows.Scan(&t.ID, &t.Title, &t.Status, &createdAt, &updatedAt); err != nil {
			return nil, err
		}
		if t.CreatedAt, err = parseTS(createdAt); err != nil {
			return nil, err
		}
		if t.UpdatedAt, err = parseTS(updatedAt); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ThreadsWithStatus lists the ids of threads in a status, in id order.
func (s *Store) ThreadsWithStatus(ctx context.Context, status string) (ids []string, err error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM threads WHERE status = ? ORDER BY id`, status)
	if err != nil {
		return nil, fmt.Errorf("sqlite: threads with status %q: %w", status, err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: threads with status %q: %w", status, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: threads with status %q: %w", status, err)
	}
	return ids, nil
}

// Events returns up to limit events of a thread with Seq > after.
func (s *Store) Events(ctx context.Context, threadID string, after int64, limit int) ([]store.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	out, err := queryEvents(ctx, s.r, threadID, after, int64(limit), -1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events of %q: %w", threadID, err)
	}
	return out, nil
}

// querier is what reads need from a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEvents reads events with after < seq (and seq <= upTo unless upTo < 0).
func queryEvents(ctx context.Context, q querier, threadID string, after, limit, upTo int64) (out []store.Event, err error) {
	rows, err := q.QueryContext(ctx, `
SELECT seq, type, data, at FROM events
WHERE thread_id = ? AND seq > ? AND (? < 0 OR seq <= ?)
ORDER BY seq LIMIT ?`, threadID, after, upTo, upTo, limit)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		var (
			e    store.Event
			data []byte // scanned as []byte so database/sql hands over a copy
			at   string
		)
		if err := rows.Scan(&e.Seq, &e.Type, &data, &at); err != nil {
			return nil, err
		}
		e.Data = data
		if e.At, err = parseTS(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DeleteThread removes a thread with its events and checkpoints.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE id = ?`, id); err != nil {
			return err
		}
		// Events and the checkpoints commits saved go with the thread (ON DELETE CASCADE).
		_, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %q: %w", id, err)
	}
	return nil
}

// CompactEvents merges the message chunks of a thread's events in (after, upTo].
func (s *Store) CompactEvents(ctx context.Context, threadID string, after, upTo int64) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, threadID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		events, err := queryEvents(ctx, tx, threadID, after, -1, upTo)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		plan, err := chunks.Compact(events)
		if err != nil {
			return err
		}
		for _, seq := range plan.Delete {
			if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE thread_id = ? AND seq = ?`, threadID, seq); err != nil {
				return fmt.Errorf("delete event %d: %w", seq, err)
			}
		}
		for _, e := range plan.Update {
			if _, err := tx.ExecContext(ctx, `UPDATE events SET data = ? WHERE thread_id = ? AND seq = ?`,
				[]byte(e.Data), threadID, e.Seq); err != nil {
				return fmt.Errorf("rewrite event %d: %w", e.Seq, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: compact events of %q: %w", threadID, err)
	}
	return nil
}

// PruneBefore deletes threads not updated since t.
func (s *Store) PruneBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cut := ts(t)
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM checkpoints WHERE id IN (SELECT id FROM threads WHERE updated_at < ?)`, cut); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE updated_at < ?`, cut)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune before %v: %w", t, err)
	}
	return int(n), nil
}

// tx runs fn in a write transaction, committing if it returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return inTx(ctx, s.w, fn)
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func ts(t time.Time) string { return t.UTC().Format(tsLayout) }

func parseTS(s string) (time.Time, error) {
	t, err := time.Parse(tsLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored timestamp %q: %w", s, err)
	}
	return t, nil
}

// jsonText binds an optional JSON document as TEXT, or NULL when absent.
func jsonText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
