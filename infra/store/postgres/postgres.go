// Package postgres is the store for deployments with a PostgreSQL server (DATABASE_URL), for example several
// deer-go instances sharing one database.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/infra/store/internal/chunks"
	"github.com/deer-go/deer-go/infra/store/internal/commitplan"
	"github.com/deer-go/deer-go/infra/store/internal/cursor"
)

// defaultPage is the Threads page size when the caller gives none.
const defaultPage = 50

// uniqueViolation is the SQLSTATE of a duplicate key.
const uniqueViolation = "23505"

// Store is a store.Store on a PostgreSQL database.
type Store struct {
	url  string
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// Open connects to databaseURL (a libpq URL or DSN; extra parameters such as search_path are passed to the
// server) and brings the schema up to date.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{url: databaseURL, pool: pool}, nil
}

// Close closes the connection pool; it is safe to call more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Get returns the checkpoint saved under id.
func (s *Store) Get(ctx context.Context, id string) ([]byte, bool, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM checkpoints WHERE id = $1`, id).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: get checkpoint %q: %w", id, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, true, nil
}

// Set saves a checkpoint under id, replacing any earlier one.
func (s *Store) Set(ctx context.Context, id string, cp []byte) error {
	if err := saveCheckpoint(ctx, s.pool, id, cp, "", time.Now()); err != nil {
		return fmt.Errorf("postgres: set checkpoint %q: %w", id, err)
	}
	return nil
}

// execer is what writes need from a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func saveCheckpoint(ctx context.Context, db execer, id string, data []byte, threadID string, now time.Time) error {
	if data == nil {
		data = []byte{}
	}
	// A plain Set knows no thread, so it keeps whatever owner an earlier commit recorded.
	_, err := db.Exec(ctx, `
INSERT INTO checkpoints (id, data, thread_id, updated_at) VALUES ($1, $2, NULLIF($3, ''), $4)
ON CONFLICT (id) DO UPDATE SET
	data = excluded.data, updated_at = excluded.updated_at, thread_id = COALESCE(excluded.thread_id, checkpoints.thread_id)`,
		id, data, threadID, now)
	if err != nil {
		return fmt.Errorf("save checkpoint %q: %w", id, err)
	}
	return nil
}

// Commit saves a thread record, events and a checkpoint atomically.
func (s *Store) Commit(ctx context.Context, c store.Commit) error {
	p, err := commitplan.New(c, time.Now())
	if err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	if p.Empty() {
		return nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
		return fmt.Errorf("postgres: commit to thread %q: %w", p.ThreadID, err)
	}
	return nil
}

func commitThread(ctx context.Context, tx pgx.Tx, p commitplan.Plan) error {
	// FOR UPDATE serialises commits to one thread; two commits creating the same thread at once are caught by
	// the events primary key instead, below.
	var stored int64
	err := tx.QueryRow(ctx, `SELECT last_seq FROM threads WHERE id = $1 FOR UPDATE`, p.ThreadID).Scan(&stored)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
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
		_, err := tx.Exec(ctx, `
INSERT INTO threads (id, title, status, state, interrupt, error, last_seq, created_at, updated_at)
VALUES ($1, $2, $3, $4::json, $5::json, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
	title = excluded.title, status = excluded.status, state = excluded.state, interrupt = excluded.interrupt,
	error = excluded.error, last_seq = excluded.last_seq, updated_at = excluded.updated_at`,
			th.ID, th.Title, th.Status, jsonText(th.State), jsonText(th.Interrupt), th.Error, last, th.CreatedAt, th.UpdatedAt)
		if err != nil {
			return fmt.Errorf("save thread: %w", err)
		}
	} else if len(p.Events) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE threads SET last_seq = $1, updated_at = $2 WHERE id = $3`,
			last, p.Now, p.ThreadID); err != nil {
			return fmt.Errorf("advance thread: %w", err)
		}
	}
	if len(p.Events) == 0 {
		return nil
	}
	seqs := make([]int64, len(p.Events))
	types := make([]string, len(p.Events))
	data := make([][]byte, len(p.Events))
	ats := make([]time.Time, len(p.Events))
	for i, e := range p.Events {
		seqs[i], types[i], data[i], ats[i] = e.Seq, e.Type, e.Data, e.At
	}
	// One statement for the whole batch: a round trip per event would dominate a 50-event flush.
	_, err = tx.Exec(ctx, `
INSERT INTO events (thread_id, seq, type, data, at)
SELECT $1, u.seq, u.type, u.data, u.at FROM unnest($2::bigint[], $3::text[], $4::bytea[], $5::timestamptz[]) AS u (seq, type, data, at)`,
		p.ThreadID, seqs, types, data, ats)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
		return fmt.Errorf("%w: another writer stored seq %d..%d first", store.ErrSeqGap, seqs[0], last)
	}
	if err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	return nil
}

// Thread returns a thread record, or store.ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*store.Thread, error) {
	var (
		th               store.Thread
		state, interrupt *string
	)
	// ::text hands back the stored JSON text byte for byte.
	err := s.pool.QueryRow(ctx, `
SELECT id, title, status, state::text, interrupt::text, error, last_seq, created_at, updated_at FROM threads WHERE id = $1`, id).
		Scan(&th.ID, &th.Title, &th.Status, &state, &interrupt, &th.Error, &th.LastSeq, &th.CreatedAt, &th.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: thread %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: thread %q: %w", id, err)
	}
	if state != nil {
		th.State = []byte(*state)
	}
	if interrupt != nil {
		th.Interrupt = []byte(*interrupt)
	}
	th.CreatedAt, th.UpdatedAt = th.CreatedAt.UTC(), th.UpdatedAt.UTC()
	return &th, nil
}

// Threads lists threads newest first.
func (s *Store) Threads(ctx context.Context, cur string, limit int) ([]store.ThreadSummary, string, error) {
	if limit <= 0 {
		limit = defaultPage
	}
	const cols = `SELECT id, title, status, created_at, updated_at FROM threads `
	const order = ` ORDER BY updated_at DESC, id LIMIT `
	var (
		rows pgx.Rows
		err  error
	)
	if cur == "" {
		rows, err = s.pool.Query(ctx, cols+order+`$1`, limit+1)
	} else {
		pos, derr := cursor.Decode(cur)
		if derr != nil {
			return nil, "", fmt.Errorf("postgres: list threads: %w", derr)
		}
		rows, err = s.pool.Query(ctx, cols+`WHERE updated_at < $1 OR (updated_at = $1 AND id > $2)`+order+`$3`,
			pos.UpdatedAt, pos.ID, limit+1)
	}
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list threads: %w", err)
	}
	page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ThreadSummary, error) {
		var t store.ThreadSummary
		err := r.Scan(&t.ID, &t.Title, &t.Status, &t.CreatedAt, &t.UpdatedAt)
		t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
		return t, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list threads: %w", err)
	}
	if len(page) <= limit {
		return page, "", nil
	}
	page = page[:limit]
	// The cursor carries the time as the database returned it (microseconds), so it compares exactly.
	last := page[limit-1]
	return page, cursor.Encode(cursor.Position{UpdatedAt: last.UpdatedAt, ID: last.ID}), nil
}

// ThreadsWithStatus lists the ids of threads in a status, in id order.
func (s *Store) ThreadsWithStatus(ctx context.Context, status string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM threads WHERE status = $1 ORDER BY id`, status)
	if err != nil {
		return nil, fmt.Errorf("postgres: threads with status %q: %w", status, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: threads with status %q: %w", status, err)
	}
	return ids, nil
}

// Events returns up to limit events of a thread with Seq > after.
func (s *Store) Events(ctx context.Context, threadID string, after int64, limit int) ([]store.Event, error) {
	var max *int64 // NULL: LIMIT ALL
	if limit > 0 {
		n := int64(limit)
		max = &n
	}
	evs, err := queryEvents(ctx, s.pool, threadID, after, max, nil)
	if err != nil {
		return nil, fmt.Errorf("postgres: events of %q: %w", threadID, err)
	}
	return evs, nil
}

// querier is what reads need from a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryEvents reads events with after < seq (and seq <= upTo unless upTo is nil).
func queryEvents(ctx context.Context, q querier, threadID string, after int64, limit, upTo *int64) ([]store.Event, error) {
	rows, err := q.Query(ctx, `
SELECT seq, type, data, at FROM events
WHERE thread_id = $1 AND seq > $2 AND ($3::bigint IS NULL OR seq <= $3)
ORDER BY seq LIMIT $4`, threadID, after, upTo, limit)
	if err != nil {
		return nil, err
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Event, error) {
		var (
			e    store.Event
			data []byte
		)
		err := r.Scan(&e.Seq, &e.Type, &data, &e.At)
		e.Data, e.At = data, e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// DeleteThread removes a thread with its events and checkpoints.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE id = $1`, id); err != nil {
			return err
		}
		// Events and the checkpoints commits saved go with the thread (ON DELETE CASCADE).
		_, err := tx.Exec(ctx, `DELETE FROM threads WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete thread %q: %w", id, err)
	}
	return nil
}

// CompactEvents merges the message chunks of a thread's events in (after, upTo].
func (s *Store) CompactEvents(ctx context.Context, threadID string, after, upTo int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Locking the thread row keeps a concurrent commit from appending while the range is rewritten.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM threads WHERE id = $1 FOR UPDATE`, threadID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		events, err := queryEvents(ctx, tx, threadID, after, nil, &upTo)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		plan, err := chunks.Compact(events)
		if err != nil {
			return err
		}
		if plan.Empty() {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE thread_id = $1 AND seq = ANY($2)`, threadID, plan.Delete); err != nil {
			return fmt.Errorf("delete merged chunks: %w", err)
		}
		seqs := make([]int64, len(plan.Update))
		data := make([][]byte, len(plan.Update))
		for i, e := range plan.Update {
			seqs[i], data[i] = e.Seq, e.Data
		}
		_, err = tx.Exec(ctx, `
UPDATE events SET data = u.data FROM unnest($2::bigint[], $3::bytea[]) AS u (seq, data)
WHERE events.thread_id = $1 AND events.seq = u.seq`, threadID, seqs, data)
		if err != nil {
			return fmt.Errorf("rewrite merged chunks: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: compact events of %q: %w", threadID, err)
	}
	return nil
}

// PruneBefore deletes threads not updated since t.
func (s *Store) PruneBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx,
			`DELETE FROM checkpoints WHERE id IN (SELECT id FROM threads WHERE updated_at < $1)`, t); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM threads WHERE updated_at < $1`, t)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: prune before %v: %w", t, err)
	}
	return int(n), nil
}

// jsonText binds an optional JSON document, or NULL when absent.
func jsonText(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
