// Package commitplan validates a store.Commit and fills in its defaults, so that every store implementation
// applies the same rules before it touches its database.
package commitplan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deer-go/deer-go/infra/store"
)

// ErrInvalid is wrapped by every error about a malformed commit (as opposed to one that conflicts with what is
// stored, which is store.ErrSeqGap or store.ErrNotFound).
var ErrInvalid = errors.New("invalid commit")

// Plan is a validated commit.
type Plan struct {
	ThreadID     string        // "" only when the commit saves nothing but a checkpoint
	Thread       *store.Thread // a copy with times in UTC and defaults filled in, or nil
	Events       []store.Event // copies with At in UTC, defaulting to Now
	CheckpointID string
	Checkpoint   []byte // nil: no checkpoint
	Now          time.Time
}

// New validates c. now (normally time.Now) fills in zero timestamps.
func New(c store.Commit, now time.Time) (Plan, error) {
	now = now.UTC()
	p := Plan{ThreadID: c.ThreadID, CheckpointID: c.CheckpointID, Checkpoint: c.Checkpoint, Now: now}
	if c.Thread != nil {
		th, err := thread(*c.Thread, now)
		if err != nil {
			return Plan{}, err
		}
		if p.ThreadID != "" && p.ThreadID != th.ID {
			return Plan{}, fmt.Errorf("%w: ThreadID %q differs from Thread.ID %q", ErrInvalid, p.ThreadID, th.ID)
		}
		p.ThreadID = th.ID
		p.Thread = &th
	}
	if p.ThreadID != "" {
		if err := key("thread id", p.ThreadID); err != nil {
			return Plan{}, err
		}
	}
	if len(c.Events) > 0 && p.ThreadID == "" {
		return Plan{}, fmt.Errorf("%w: events without a thread id", ErrInvalid)
	}
	p.Events = make([]store.Event, len(c.Events))
	for i, e := range c.Events {
		if err := key("event type", e.Type); err != nil {
			return Plan{}, err
		}
		if i > 0 && e.Seq != c.Events[i-1].Seq+1 {
			return Plan{}, fmt.Errorf("%w: event seq %d follows %d in one commit", store.ErrSeqGap, e.Seq, c.Events[i-1].Seq)
		}
		if e.At.IsZero() {
			e.At = now
		}
		e.At = e.At.UTC()
		p.Events[i] = e
	}
	if c.Checkpoint != nil {
		if c.CheckpointID == "" {
			return Plan{}, fmt.Errorf("%w: checkpoint without an id", ErrInvalid)
		}
		if err := key("checkpoint id", c.CheckpointID); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// Check reports whether the commit's events continue a thread whose last stored event has Seq stored.
func (p Plan) Check(stored int64) error {
	if len(p.Events) == 0 {
		return nil
	}
	if first := p.Events[0].Seq; first != stored+1 {
		return fmt.Errorf("%w: thread %q is at seq %d, commit starts at %d", store.ErrSeqGap, p.ThreadID, stored, first)
	}
	return nil
}

// LastSeq is the thread's last seq once the commit is applied on top of stored.
func (p Plan) LastSeq(stored int64) int64 {
	if len(p.Events) == 0 {
		return stored
	}
	return p.Events[len(p.Events)-1].Seq
}

// Empty reports whether the commit writes nothing at all.
func (p Plan) Empty() bool {
	return p.ThreadID == "" && p.Checkpoint == nil
}

func thread(t store.Thread, now time.Time) (store.Thread, error) {
	if t.ID == "" {
		return store.Thread{}, fmt.Errorf("%w: thread without an id", ErrInvalid)
	}
	if err := key("thread status", t.Status); err != nil {
		return store.Thread{}, err
	}
	var err error
	if t.State, err = document("state", t.State); err != nil {
		return store.Thread{}, err
	}
	if t.Interrupt, err = document("interrupt", t.Interrupt); err != nil {
		return store.Thread{}, err
	}
	// Title and Error carry model and web text; a stray NUL or broken UTF-8 there must not make the run
	// unsaveable (PostgreSQL text refuses both), so they are cleaned rather than rejected.
	t.Title = text(t.Title)
	t.Error = text(t.Error)
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = now
	}
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	return t, nil
}

// document checks an optional JSON value; empty means absent and is stored as NULL.
func document(name string, b json.RawMessage) (json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8 JSON", ErrInvalid, name)
	}
	return b, nil
}

// key checks an identifier-like string that both databases must store verbatim.
func key(name, s string) error {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return fmt.Errorf("%w: %s %q is not NUL-free UTF-8", ErrInvalid, name, s)
	}
	return nil
}

func text(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
