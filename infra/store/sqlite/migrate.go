package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// migrations are applied in order, each once; a released version is never edited, only followed by a new one.
var migrations = [...]string{
	1: `
CREATE TABLE threads (
	id         TEXT PRIMARY KEY,
	title      TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL DEFAULT '',
	state      TEXT,
	interrupt  TEXT,
	error      TEXT NOT NULL DEFAULT '',
	last_seq   INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX threads_updated_idx ON threads (updated_at DESC, id);
CREATE INDEX threads_status_idx ON threads (status);

CREATE TABLE events (
	thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
	seq       INTEGER NOT NULL,
	type      TEXT NOT NULL,
	data      BLOB,
	at        TEXT NOT NULL,
	PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
	id         TEXT PRIMARY KEY,
	data       BLOB NOT NULL,
	thread_id  TEXT REFERENCES threads (id) ON DELETE CASCADE,
	updated_at TEXT NOT NULL
);
CREATE INDEX checkpoints_thread_idx ON checkpoints (thread_id);
`,
}

// migrate applies the migrations the database has not seen yet, each in its own transaction. The write lock
// taken by BEGIN IMMEDIATE keeps two processes opening the same file from applying one twice.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	for v := 1; v < len(migrations); v++ {
		applied := false
		err := inTx(ctx, db, func(tx *sql.Tx) error {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM schema_migrations WHERE version = ?`, v).Scan(&one)
			if err == nil {
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				v, ts(time.Now())); err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %d: %w", v, err)
		}
		if applied {
			slog.InfoContext(ctx, "store schema migrated", "driver", "sqlite", "version", v)
		}
	}
	return nil
}
