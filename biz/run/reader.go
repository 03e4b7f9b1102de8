package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/infra/store"
)

// Reader follows a thread's events from a sequence number: stored events first, then the live run's, until the run
// ends or pauses. Readers never slow a run down: each reads at its own pace.
type Reader struct {
	m        *Manager
	threadID string
	cursor   int64
	a        *active
}

// Follow returns a reader of the thread's events with Seq > after.
func (m *Manager) Follow(threadID string, after int64) *Reader {
	m.mu.Lock()
	a := m.runs[threadID]
	m.mu.Unlock()
	return &Reader{m: m, threadID: threadID, cursor: after, a: a}
}

const storePage = 500

// Next returns the next events. done is true once the run ended (or there is no run) and every event was returned.
func (r *Reader) Next(ctx context.Context) (evs []SeqEvent, done bool, err error) {
	for {
		if r.a == nil {
			evs, err := r.fromStore(ctx)
			return evs, len(evs) == 0 && err == nil, err
		}
		mem, gap, ended, changed := r.a.after(r.cursor)
		if gap {
			evs, err := r.fromStore(ctx)
			if err != nil || len(evs) > 0 {
				return evs, false, err
			}
			return nil, false, fmt.Errorf("events after %d of thread %s are missing", r.cursor, r.threadID)
		}
		if len(mem) > 0 {
			r.cursor = mem[len(mem)-1].Seq
			return mem, false, nil
		}
		if ended {
			r.a = nil // anything committed after the last read is in the store
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// fromStore reads the next page of stored events after the cursor.
func (r *Reader) fromStore(ctx context.Context) ([]SeqEvent, error) {
	stored, err := r.m.store.Events(ctx, r.threadID, r.cursor, storePage)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make([]SeqEvent, 0, len(stored))
	for _, e := range stored {
		ev, err := decodeEvent(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
		r.cursor = e.Seq
	}
	return out, nil
}

func decodeEvent(e store.Event) (SeqEvent, error) {
	var d model.EventData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return SeqEvent{}, fmt.Errorf("decode stored event %d: %w", e.Seq, err)
	}
	return SeqEvent{Seq: e.Seq, Event: model.Event{Type: e.Type, Data: d}}, nil
}
