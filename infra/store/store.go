// Package store keeps everything that must survive a restart: the graph's checkpoints, thread records and each
// thread's event log. SQLite (embedded, pure Go) is the default; PostgreSQL is used when DATABASE_URL is set. Both
// pass the same contract suite (storetest).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned for a thread that does not exist.
var ErrNotFound = errors.New("not found")

// ErrSeqGap is returned by Commit when the events do not continue the thread's stored sequence, typically because
// another writer got there first. Nothing of the commit is saved.
var ErrSeqGap = errors.New("event sequence does not continue the stored one")

// ErrInvalidCursor is returned by Threads for a cursor it did not issue.
var ErrInvalidCursor = errors.New("invalid page cursor")

// Thread statuses.
const (
	StatusRunning          = "running"
	StatusWaitingForReview = "waiting_for_review"
	StatusDone             = "done"
	StatusCancelled        = "cancelled"
	StatusInterrupted      = "interrupted"
	StatusFailed           = "failed"
)

// Thread is one conversation: its status, its latest research state (opaque JSON owned by the run manager) and the
// pending interrupt, if any.
type Thread struct {
	ID        string
	Title     string
	Status    string
	State     json.RawMessage // the run manager's snapshot of the research State
	Interrupt json.RawMessage // the pending interrupt (id, kind, content, options), or nil
	Error     string
	LastSeq   int64 // sequence number of the thread's last stored event
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ThreadSummary is a thread in a listing.
type ThreadSummary struct {
	ID        string
	Title     string
	Status    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Event is one stored SSE event of a thread. Seq starts at 1 and increases across all runs of the thread.
type Event struct {
	Seq  int64
	Type string
	Data json.RawMessage
	At   time.Time
}

// Commit is one atomic write: the thread record, the events produced since the last commit and, optionally, a graph
// checkpoint. Either all of it is saved or none of it.
type Commit struct {
	// ThreadID names the thread the events belong to. It may be left empty when Thread is set (Thread.ID is used);
	// it is needed when Thread is nil, and then the thread must already exist.
	ThreadID string
	Thread   *Thread // upserted; nil leaves the record as it is
	Events   []Event // appended; their Seq must continue the thread's sequence (LastSeq+1, +2, …)
	// CheckpointID/Checkpoint, when Checkpoint is non-nil, save a graph checkpoint in the same transaction.
	CheckpointID string
	Checkpoint   []byte
}

// Store is the storage the run manager and the graph need.
type Store interface {
	// Get and Set are Eino's compose.CheckPointStore.
	Get(ctx context.Context, checkpointID string) ([]byte, bool, error)
	Set(ctx context.Context, checkpointID string, checkpoint []byte) error

	// Commit writes a thread record, events and a checkpoint in one transaction. Events whose Seq does not
	// continue the stored sequence make the whole commit fail with ErrSeqGap.
	Commit(ctx context.Context, c Commit) error
	// Thread returns a thread record, or ErrNotFound.
	Thread(ctx context.Context, id string) (*Thread, error)
	// Threads lists threads newest first (by UpdatedAt descending, then ID ascending); limit <= 0 picks a default
	// page size. cursor is "" for the first page or the next value of the previous page; next is "" on the last
	// page. The cursor is opaque to callers; one the store did not issue gives ErrInvalidCursor.
	Threads(ctx context.Context, cursor string, limit int) (page []ThreadSummary, next string, err error)
	// ThreadsWithStatus lists the ids of threads in a status (used at start-up to find runs cut off by a crash).
	ThreadsWithStatus(ctx context.Context, status string) ([]string, error)
	// Events returns up to limit events of a thread with Seq > after, in order; limit <= 0 means all of them.
	Events(ctx context.Context, threadID string, after int64, limit int) ([]Event, error)
	// DeleteThread removes a thread, its events and its checkpoints (the one saved under the thread's id and any
	// saved by its commits). Deleting a missing thread is not an error.
	DeleteThread(ctx context.Context, id string) error
	// CompactEvents replaces a finished thread's events with seq in (after, upTo] by merged ones: consecutive
	// message_chunk events of one message become one event (content and reasoning_content concatenated, the last
	// chunk's fields kept, Seq of the last chunk). Other events are kept as they are.
	CompactEvents(ctx context.Context, threadID string, after, upTo int64) error
	// PruneBefore deletes threads (with their events and checkpoints) not updated since t; it returns how many.
	PruneBefore(ctx context.Context, t time.Time) (int, error)
	Close() error
}
