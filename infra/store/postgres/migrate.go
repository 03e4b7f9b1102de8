package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the advisory lock key held while migrating; any constant unlikely to clash will do.
const migrationLock int64 = 0x64656572676f // "deergo"

// migrations are applied in order, each once; a released version is never edited, only followed by a new one.
//
// Thread state and interrupts are json rather than jsonb: json keeps the document byte for byte and accepts
// \u0000, which jsonb rejects and which crawled text does contain. Event data is bytea so replays return exactly
// what was streamed.
var migrations = [...]string{
	1: `
CREATE TABLE threads (
	id         TEXT PRIMARY KEY,
	title      TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL DEFAULT '',
	state      JSON,
	interrupt  JSON,
	error      TEXT NOT NULL DEFAULT '',
	last_seq   BIGINT NOT NULL DEFAULT 0,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX threads_updated_idx ON threads (updated_at DESC, id);
CREATE INDEX threads_status_idx ON threads (status);

CREATE TABLE events (
	thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
	seq       BIGINT NOT NULL,
	type      TEXT NOT NULL,
	data      BYTEA,
	at        TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (thread_id, seq)
);

CREATE TABLE checkpoints (
	id         TEXT PRIMARY KEY,
	data       BYTEA NOT NULL,
	thread_id  TEXT REFERENCES threads (id) ON DELETE CASCADE,
	updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX checkpoints_thread_idx ON checkpoints (thread_id);
`,
}

// migrate applies pending migrations in one transaction under an advisory lock, so servers starting together
// neither race nor see a half-built schema. The lock is released with the transaction.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	var applied []int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		have := make(map[int]bool, len(done))
		for _, v := range done {
			have[int(v)] = true
		}
		for v := 1; v < len(migrations); v++ {
			if have[v] {
				continue
			}
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("record migration %d: %w", v, err)
			}
			applied = append(applied, v)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, v := range applied {
		slog.InfoContext(ctx, "store schema migrated", "driver", "postgres", "version", v)
	}
	return nil
}
