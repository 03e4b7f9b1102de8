package run

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/deer-go/deer-go/biz/graph"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/infra/store"
)

// SeqEvent is an event with its sequence number in the thread (the SSE id).
type SeqEvent struct {
	Seq int64
	model.Event
}

// active is one run in progress: it owns the run's in-memory event log, which readers follow, and writes the log,
// the thread record and checkpoints to the store.
type active struct {
	m        *Manager
	threadID string
	cancel   context.CancelCauseFunc
	finished chan struct{} // closed when the run goroutine has returned and everything is committed

	mu        sync.Mutex
	log       []SeqEvent // events not yet dropped from memory; log[0].Seq == head
	head      int64      // seq of log[0] (or next seq when empty)
	nextSeq   int64
	persisted int64 // last seq committed to the store
	firstSeq  int64 // seq of this run's first event
	changed   chan struct{}
	ended     bool
	rec       store.Thread // the thread record as last committed (State/Interrupt updated by the run)
	commitMu  sync.Mutex   // serialises commits so that event sequences are written in order
}

func newActive(m *Manager, rec store.Thread, cancel context.CancelCauseFunc) *active {
	next := rec.LastSeq + 1
	return &active{
		m: m, threadID: rec.ID, cancel: cancel, finished: make(chan struct{}),
		head: next, nextSeq: next, persisted: rec.LastSeq, firstSeq: next,
		changed: make(chan struct{}), rec: rec,
	}
}

// append adds an event to the log. It never blocks on readers or on the store.
func (a *active) append(ev model.Event) {
	a.mu.Lock()
	if a.ended {
		a.mu.Unlock()
		a.m.opts.Logger.Error("event after the run ended", "thread_id", a.threadID, "event", ev.Type)
		return
	}
	a.log = append(a.log, SeqEvent{Seq: a.nextSeq, Event: ev})
	a.nextSeq++
	a.trimLocked()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// trimLocked bounds the memory of a long run: events already in the store are dropped from memory once the log
// exceeds its cap; readers that fall behind read them back from the store.
func (a *active) trimLocked() {
	over := len(a.log) - a.m.opts.MaxLogEvents
	if over <= 0 {
		return
	}
	drop := 0
	for drop < over && a.log[drop].Seq <= a.persisted {
		drop++
	}
	if drop > 0 {
		a.log = append([]SeqEvent(nil), a.log[drop:]...)
		a.head = a.log[0].Seq
	}
}

// after returns in-memory events with Seq > seq. gap is true when some of them are no longer in memory (the
// reader must fetch seq+1 … head-1 from the store first).
func (a *active) after(seq int64) (evs []SeqEvent, gap bool, ended bool, changed <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq+1 < a.head {
		return nil, true, a.ended, a.changed
	}
	i := int(seq + 1 - a.head)
	if i < len(a.log) {
		evs = append([]SeqEvent(nil), a.log[i:]...)
	}
	return evs, false, a.ended, a.changed
}

// commit writes the events produced since the last commit, the thread record and, optionally, a checkpoint in one
// transaction.
func (a *active) commit(ctx context.Context, update func(*store.Thread), cpID string, cp []byte) error {
	a.commitMu.Lock()
	defer a.commitMu.Unlock()
	a.mu.Lock()
	var evs []store.Event
	for _, e := range a.log {
		if e.Seq <= a.persisted {
			continue
		}
		data, err := json.Marshal(e.Data)
		if err != nil {
			a.mu.Unlock()
			return fmt.Errorf("encode event: %w", err)
		}
		evs = append(evs, store.Event{Seq: e.Seq, Type: e.Type, Data: data, At: a.m.opts.Now()})
	}
	rec := a.rec
	if update != nil {
		update(&rec)
	}
	a.mu.Unlock()
	if len(evs) > 0 {
		rec.LastSeq = evs[len(evs)-1].Seq
	}
	rec.UpdatedAt = a.m.opts.Now()
	// A commit must not be lost to the run's own cancellation: it records how the run ended.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.m.store.Commit(cctx, store.Commit{Thread: &rec, Events: evs, CheckpointID: cpID, Checkpoint: cp}); err != nil {
		return fmt.Errorf("commit thread %s: %w", a.threadID, err)
	}
	a.mu.Lock()
	a.rec = rec
	if len(evs) > 0 {
		a.persisted = evs[len(evs)-1].Seq
	}
	a.trimLocked()
	a.mu.Unlock()
	return nil
}

// snapshot records the latest research state (called by the graph after every agent) with the events so far.
func (a *active) snapshot(ctx context.Context, st *model.State) {
	b, err := json.Marshal(st)
	if err != nil {
		a.m.opts.Logger.Error("encode state", "thread_id", a.threadID, "err", err)
		return
	}
	title := threadTitle(st)
	if err := a.commit(ctx, func(r *store.Thread) {
		r.State = b
		if title != "" {
			r.Title = title
		}
	}, "", nil); err != nil {
		a.m.opts.Logger.Error("save state", "thread_id", a.threadID, "err", err)
	}
}

// end marks the log complete and wakes every reader.
func (a *active) end() {
	a.mu.Lock()
	a.ended = true
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

func threadTitle(st *model.State) string {
	if st == nil {
		return ""
	}
	if st.Plan != nil && st.Plan.Title != "" {
		return st.Plan.Title
	}
	for _, m := range st.Messages {
		if m.Role == "user" && m.Kind == "" {
			return clip(m.Content, 80)
		}
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// pauseJSON is the stored form of a pending interrupt.
type pauseJSON struct {
	ID      string         `json:"id"`
	Kind    string         `json:"kind"`
	Content string         `json:"content"`
	Options []model.Option `json:"options"`
}

func encodePause(p *graph.Pause) json.RawMessage {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(pauseJSON{ID: p.ID, Kind: p.Kind, Content: p.Content, Options: p.Options})
	if err != nil {
		return nil
	}
	return b
}

func decodePause(b json.RawMessage) *graph.Pause {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var p pauseJSON
	if err := json.Unmarshal(b, &p); err != nil || p.ID == "" {
		return nil
	}
	return &graph.Pause{ID: p.ID, Kind: p.Kind, Content: p.Content, Options: p.Options}
}
