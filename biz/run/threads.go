package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/infra/store"
)

// InterruptView is a pending interrupt as the API shows it.
type InterruptView struct {
	ID      string         `json:"id"`
	Kind    string         `json:"kind"`
	Content string         `json:"content"`
	Options []model.Option `json:"options"`
}

// ThreadView is a thread as GET /api/threads/{id} shows it.
type ThreadView struct {
	ID          string           `json:"id"`
	Title       string           `json:"title"`
	Status      string           `json:"status"`
	Messages    []model.Message  `json:"messages"`
	Plan        *model.Plan      `json:"plan"`
	Report      string           `json:"report"`
	Citations   []model.Citation `json:"citations"`
	Interrupt   *InterruptView   `json:"interrupt"`
	LastEventID int64            `json:"last_event_id"`
	Error       string           `json:"error,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}

// ThreadSummary is a thread in GET /api/threads.
type ThreadSummary struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// State returns a thread's latest research state.
func (m *Manager) State(ctx context.Context, id string) (*model.State, error) {
	rec, err := m.store.Thread(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st := &model.State{}
	if len(rec.State) > 0 {
		if err := json.Unmarshal(rec.State, st); err != nil {
			return nil, fmt.Errorf("decode thread state: %w", err)
		}
	}
	return st, nil
}

// Thread returns the view of one thread.
func (m *Manager) Thread(ctx context.Context, id string) (*ThreadView, error) {
	rec, err := m.store.Thread(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	v := &ThreadView{ID: rec.ID, Title: rec.Title, Status: rec.Status, LastEventID: rec.LastSeq, Error: rec.Error,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, Messages: []model.Message{}, Citations: []model.Citation{}}
	if len(rec.State) > 0 {
		var st model.State
		if err := json.Unmarshal(rec.State, &st); err != nil {
			return nil, fmt.Errorf("decode thread state: %w", err)
		}
		v.Messages = append(v.Messages, st.Messages...)
		v.Plan, v.Report = st.Plan, st.FinalReport
		if st.Citations != nil {
			v.Citations = st.Citations
		}
	}
	if p := decodePause(rec.Interrupt); p != nil {
		v.Interrupt = &InterruptView{ID: p.ID, Kind: p.Kind, Content: p.Content, Options: p.Options}
	}
	return v, nil
}

// Threads lists threads newest first.
func (m *Manager) Threads(ctx context.Context, cursor string, limit int) ([]ThreadSummary, string, error) {
	page, next, err := m.store.Threads(ctx, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]ThreadSummary, 0, len(page))
	for _, t := range page {
		out = append(out, ThreadSummary{ID: t.ID, Title: t.Title, Status: t.Status, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
	}
	return out, next, nil
}

// Delete removes a thread that is not running.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if m.Running(id) {
		return ErrBusy
	}
	if _, err := m.store.Thread(ctx, id); errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	return m.store.DeleteThread(ctx, id)
}
