package commitplan

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/deer-go/deer-go/infra/store"
)

func TestNew(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 7200))
	events := func(seqs ...int64) []store.Event {
		var out []store.Event
		for _, s := range seqs {
			out = append(out, store.Event{Seq: s, Type: "message_chunk"})
		}
		return out
	}
	tests := []struct {
		name    string
		c       store.Commit
		wantErr error
		wantID  string
		empty   bool
	}{
		{name: "nothing", empty: true},
		{name: "thread id from thread", c: store.Commit{Thread: &store.Thread{ID: "t"}}, wantID: "t"},
		{name: "events on an existing thread", c: store.Commit{ThreadID: "t", Events: events(4, 5)}, wantID: "t"},
		{name: "checkpoint alone", c: store.Commit{CheckpointID: "c", Checkpoint: []byte{}}, empty: false},
		{name: "thread without id", c: store.Commit{Thread: &store.Thread{}}, wantErr: ErrInvalid},
		{name: "mismatched ids", c: store.Commit{ThreadID: "a", Thread: &store.Thread{ID: "b"}}, wantErr: ErrInvalid},
		{name: "events without thread", c: store.Commit{Events: events(1)}, wantErr: ErrInvalid},
		{name: "gap inside commit", c: store.Commit{ThreadID: "t", Events: events(1, 3)}, wantErr: store.ErrSeqGap},
		{name: "checkpoint without id", c: store.Commit{Checkpoint: []byte("x")}, wantErr: ErrInvalid},
		{name: "bad state", c: store.Commit{Thread: &store.Thread{ID: "t", State: json.RawMessage(`{`)}}, wantErr: ErrInvalid},
		{name: "state not utf-8", c: store.Commit{Thread: &store.Thread{ID: "t", State: json.RawMessage("\"\xff\"")}}, wantErr: ErrInvalid},
		{name: "nul in id", c: store.Commit{ThreadID: "a\x00b"}, wantErr: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.c, now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if p.ThreadID != tt.wantID || p.Empty() != tt.empty {
				t.Fatalf("ThreadID %q Empty %v, want %q %v", p.ThreadID, p.Empty(), tt.wantID, tt.empty)
			}
			for _, e := range p.Events {
				if !e.At.Equal(now) || e.At.Location() != time.UTC {
					t.Errorf("event At = %v, want %v in UTC", e.At, now)
				}
			}
		})
	}
}

func TestThreadDefaults(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("y", -3600))
	p, err := New(store.Commit{Thread: &store.Thread{
		ID: "t", Title: "a\x00b\xffc", Error: "e", State: json.RawMessage{}, CreatedAt: created,
	}}, now)
	if err != nil {
		t.Fatal(err)
	}
	th := p.Thread
	if th.Title != "ab\uFFFDc" || th.Error != "e" || th.State != nil {
		t.Errorf("cleaned thread = %+v", th)
	}
	if !th.CreatedAt.Equal(created) || th.CreatedAt.Location() != time.UTC || !th.UpdatedAt.Equal(now) {
		t.Errorf("times = %v, %v", th.CreatedAt, th.UpdatedAt)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		stored int64
		seqs   []int64
		ok     bool
		last   int64
	}{
		{stored: 0, seqs: []int64{1, 2}, ok: true, last: 2},
		{stored: 0, seqs: []int64{2}, ok: false},
		{stored: 5, seqs: []int64{6}, ok: true, last: 6},
		{stored: 5, seqs: []int64{5, 6}, ok: false},
		{stored: 5, seqs: nil, ok: true, last: 5},
	}
	for _, tt := range tests {
		var evs []store.Event
		for _, s := range tt.seqs {
			evs = append(evs, store.Event{Seq: s})
		}
		p, err := New(store.Commit{ThreadID: "t", Events: evs}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check(tt.stored)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrSeqGap)) {
			t.Errorf("Check(%d) with %v = %v", tt.stored, tt.seqs, err)
		}
		if tt.ok && p.LastSeq(tt.stored) != tt.last {
			t.Errorf("LastSeq(%d) = %d, want %d", tt.stored, p.LastSeq(tt.stored), tt.last)
		}
	}
}
