// Package storetest is the contract every store.Store implementation must meet. An implementation's tests call
// Run (and Bench) with a function that opens a fresh, empty store.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/deer-go/deer-go/infra/store"
)

// Option adjusts Run.
type Option func(*config)

type config struct {
	reopen func(t *testing.T, s store.Store) store.Store
}

// WithReopen enables the persistence test. reopen must close s and return a new store on the same database.
func WithReopen(reopen func(t *testing.T, s store.Store) store.Store) Option {
	return func(c *config) { c.reopen = reopen }
}

// base is an arbitrary fixed instant so tests control every stored timestamp.
func base() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 123456000, time.UTC) }

// Run runs the contract suite. open must return a new, empty store for every call and close it at cleanup
// (closing twice must be harmless).
func Run(t *testing.T, open func(t *testing.T) store.Store, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Checkpoints", testCheckpoints},
		{"CommitCreatesThread", testCommitCreatesThread},
		{"CommitContinuesThread", testCommitContinuesThread},
		{"CommitIsAtomic", testCommitIsAtomic},
		{"CompetingWriters", testCompetingWriters},
		{"EventsPaging", testEventsPaging},
		{"ThreadsPaging", testThreadsPaging},
		{"ThreadsWithStatus", testThreadsWithStatus},
		{"DeleteThread", testDeleteThread},
		{"CompactEvents", testCompactEvents},
		{"CompactEventsRange", testCompactEventsRange},
		{"PruneBefore", testPruneBefore},
		{"ConcurrentCommits", testConcurrentCommits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
	t.Run("Reopen", func(t *testing.T) {
		if cfg.reopen == nil {
			t.Skip("the implementation gave no reopen hook")
		}
		testReopen(t, open(t), cfg.reopen)
	})
}

func testCheckpoints(t *testing.T, s store.Store) {
	ctx := t.Context()
	if b, ok, err := s.Get(ctx, "missing"); err != nil || ok || b != nil {
		t.Fatalf("Get(missing) = %q, %v, %v; want nil, false, nil", b, ok, err)
	}
	big := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.UintN(256))
	}
	tests := []struct {
		name string
		id   string
		data []byte
	}{
		{"first save", "cp", []byte("one")},
		{"overwrite", "cp", []byte("two, longer")},
		{"empty", "empty", []byte{}},
		{"binary 64KiB", "big", big},
		{"odd id", "thread/ü:1", []byte{0, 1, 0}},
	}
	for _, tt := range tests {
		in := bytes.Clone(tt.data)
		if err := s.Set(ctx, tt.id, in); err != nil {
			t.Fatalf("%s: Set: %v", tt.name, err)
		}
		for i := range in {
			in[i] ^= 0xff // the store must have copied the caller's buffer
		}
		got, ok, err := s.Get(ctx, tt.id)
		if err != nil || !ok || !bytes.Equal(got, tt.data) {
			t.Fatalf("%s: Get = %d bytes, %v, %v; want %d bytes", tt.name, len(got), ok, err, len(tt.data))
		}
		for i := range got {
			got[i] ^= 0xff // nor may it hand out its own
		}
		if again, _, err := s.Get(ctx, tt.id); err != nil || !bytes.Equal(again, tt.data) {
			t.Fatalf("%s: second Get changed: %v", tt.name, err)
		}
	}
}

func testCommitCreatesThread(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.Thread(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Thread(missing) error = %v, want ErrNotFound", err)
	}
	// \u0000 and non-ASCII text must survive: research state carries arbitrary web text.
	state := json.RawMessage(`{"plan": {"title":"Q"}, "notes":"a\u0000b ü 😀", "n": 1.50}`)
	th := &store.Thread{
		ID: "t1", Title: "Why is the sky blue?", Status: store.StatusRunning, State: state, Error: "none yet",
		CreatedAt: base(), UpdatedAt: base().Add(time.Second),
	}
	evs := chunkEvents(1, 3, "m1")
	mustCommit(t, s, store.Commit{Thread: th, Events: evs, CheckpointID: "t1", Checkpoint: []byte("cp-1")})

	got, err := s.Thread(ctx, "t1")
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	want := *th
	want.LastSeq = 3
	checkThread(t, got, &want)
	checkEvents(t, s, "t1", evs)
	if cp, ok, err := s.Get(ctx, "t1"); err != nil || !ok || string(cp) != "cp-1" {
		t.Fatalf("checkpoint = %q, %v, %v", cp, ok, err)
	}
}

func testCommitContinuesThread(t *testing.T, s store.Store) {
	ctx := t.Context()
	th := &store.Thread{ID: "t", Title: "first", Status: store.StatusRunning, CreatedAt: base(), UpdatedAt: base()}
	mustCommit(t, s, store.Commit{Thread: th, Events: chunkEvents(1, 3, "m1")})

	// An upsert keeps the original creation time and ignores the caller's LastSeq.
	interrupt := json.RawMessage(`{"id":"i1","kind":"plan_review","options":["accept","edit"]}`)
	th2 := &store.Thread{
		ID: "t", Title: "second", Status: store.StatusWaitingForReview, Interrupt: interrupt, LastSeq: 99,
		CreatedAt: base().Add(time.Hour), UpdatedAt: base().Add(time.Minute),
	}
	mustCommit(t, s, store.Commit{Thread: th2, Events: chunkEvents(4, 2, "m2")})
	want := *th2
	want.CreatedAt, want.LastSeq = base(), 5
	got := mustThread(t, s, "t")
	checkThread(t, got, &want)

	// A record-only commit leaves the sequence where it is.
	th3 := want
	th3.Status, th3.Interrupt, th3.UpdatedAt = store.StatusRunning, nil, base().Add(2*time.Minute)
	mustCommit(t, s, store.Commit{Thread: &th3})
	checkThread(t, mustThread(t, s, "t"), &th3)

	// Events alone advance LastSeq and UpdatedAt of the existing record.
	before := time.Now().Add(-time.Second)
	mustCommit(t, s, store.Commit{ThreadID: "t", Events: chunkEvents(6, 2, "m3")})
	got = mustThread(t, s, "t")
	if got.LastSeq != 7 || got.Title != "second" || got.UpdatedAt.Before(before) {
		t.Fatalf("after events-only commit: LastSeq %d Title %q UpdatedAt %v", got.LastSeq, got.Title, got.UpdatedAt)
	}
	all := append(append(chunkEvents(1, 3, "m1"), chunkEvents(4, 2, "m2")...), chunkEvents(6, 2, "m3")...)
	checkEvents(t, s, "t", all)

	// Without a record to create, the thread has to exist already.
	for name, c := range map[string]store.Commit{
		"events":     {ThreadID: "nope", Events: chunkEvents(1, 1, "m")},
		"checkpoint": {ThreadID: "nope", CheckpointID: "nope-cp", Checkpoint: []byte("x")},
	} {
		if err := s.Commit(ctx, c); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s for a missing thread: error = %v, want ErrNotFound", name, err)
		}
	}
	if _, ok, err := s.Get(ctx, "nope-cp"); err != nil || ok {
		t.Errorf("checkpoint of a failed commit: ok=%v err=%v", ok, err)
	}
	if _, err := s.Thread(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failed commit created a thread: %v", err)
	}
}

func testCommitIsAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	th := &store.Thread{ID: "t", Title: "kept", Status: store.StatusRunning, CreatedAt: base(), UpdatedAt: base()}
	mustCommit(t, s, store.Commit{Thread: th, Events: chunkEvents(1, 3, "m1"), CheckpointID: "t", Checkpoint: []byte("v1")})

	changed := *th
	changed.Title, changed.Status = "changed", store.StatusFailed
	tests := []struct {
		name string
		c    store.Commit
	}{
		{"gap", store.Commit{Thread: &changed, Events: chunkEvents(5, 2, "m2"), CheckpointID: "t", Checkpoint: []byte("v2")}},
		{"repeat", store.Commit{Thread: &changed, Events: chunkEvents(3, 2, "m2"), CheckpointID: "t", Checkpoint: []byte("v2")}},
		{"from one", store.Commit{ThreadID: "t", Events: chunkEvents(1, 1, "m2"), CheckpointID: "other", Checkpoint: []byte("v2")}},
		{"hole inside", store.Commit{Thread: &changed, Events: []store.Event{ev(4, "message_chunk", `{}`), ev(6, "message_chunk", `{}`)}}},
		{"new thread not at one", store.Commit{
			Thread: &store.Thread{ID: "fresh", Status: store.StatusRunning}, Events: chunkEvents(2, 1, "m"),
			CheckpointID: "fresh", Checkpoint: []byte("v"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Commit(ctx, tt.c); !errors.Is(err, store.ErrSeqGap) {
				t.Fatalf("Commit error = %v, want ErrSeqGap", err)
			}
			got := mustThread(t, s, "t")
			if got.Title != "kept" || got.Status != store.StatusRunning || got.LastSeq != 3 {
				t.Errorf("thread changed by a failed commit: %+v", got)
			}
			checkEvents(t, s, "t", chunkEvents(1, 3, "m1"))
			if cp, _, err := s.Get(ctx, "t"); err != nil || string(cp) != "v1" {
				t.Errorf("checkpoint changed by a failed commit: %q, %v", cp, err)
			}
			for _, id := range []string{"other", "fresh"} {
				if _, ok, err := s.Get(ctx, id); err != nil || ok {
					t.Errorf("checkpoint %q saved by a failed commit (err %v)", id, err)
				}
			}
			if _, err := s.Thread(ctx, "fresh"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("failed commit created a thread: %v", err)
			}
		})
	}
}

// testCompetingWriters races writers that all believe they start a thread; exactly one may win.
func testCompetingWriters(t *testing.T, s store.Store) {
	ctx := t.Context()
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			th := &store.Thread{ID: "race", Title: fmt.Sprint("writer ", i), Status: store.StatusRunning}
			errs[i] = s.Commit(ctx, store.Commit{Thread: th, Events: chunkEvents(1, 2, fmt.Sprint("m", i))})
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrSeqGap):
			t.Errorf("writer %d: error = %v, want nil or ErrSeqGap", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers won, want exactly 1", won)
	}
	got := mustThread(t, s, "race")
	if got.LastSeq != 2 {
		t.Fatalf("LastSeq = %d, want 2", got.LastSeq)
	}
	evs, err := s.Events(ctx, "race", 0, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events = %d, %v; want 2", len(evs), err)
	}
}

func testEventsPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	all := chunkEvents(1, 10, "m")
	mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: "t", Status: store.StatusDone}, Events: all[:4]})
	mustCommit(t, s, store.Commit{ThreadID: "t", Events: all[4:]})
	tests := []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 3, []int64{1, 2, 3}},
		{3, 3, []int64{4, 5, 6}},
		{8, 5, []int64{9, 10}},
		{10, 5, nil},
		{0, 0, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{7, -1, []int64{8, 9, 10}},
	}
	for _, tt := range tests {
		got, err := s.Events(ctx, "t", tt.after, tt.limit)
		if err != nil {
			t.Fatalf("Events(after %d, limit %d): %v", tt.after, tt.limit, err)
		}
		if seqs := seqsOf(got); !slices.Equal(seqs, tt.want) {
			t.Errorf("Events(after %d, limit %d) = %v, want %v", tt.after, tt.limit, seqs, tt.want)
		}
		for _, e := range got {
			checkEvent(t, e, all[e.Seq-1])
		}
	}
	if got, err := s.Events(ctx, "missing", 0, 10); err != nil || len(got) != 0 {
		t.Errorf("Events(missing thread) = %v, %v; want none", got, err)
	}
}

func testThreadsPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 25
	var want []store.ThreadSummary
	for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(n) {
		// Five threads share each timestamp, so the id has to break ties.
		th := &store.Thread{
			ID: fmt.Sprintf("t%02d", i), Title: fmt.Sprint("title ", i), Status: store.StatusDone,
			CreatedAt: base(), UpdatedAt: base().Add(time.Duration(i/5) * time.Second),
		}
		mustCommit(t, s, store.Commit{Thread: th})
		want = append(want, store.ThreadSummary{ID: th.ID, Title: th.Title, Status: th.Status, CreatedAt: th.CreatedAt, UpdatedAt: th.UpdatedAt})
	}
	sort.Slice(want, func(i, j int) bool {
		if !want[i].UpdatedAt.Equal(want[j].UpdatedAt) {
			return want[i].UpdatedAt.After(want[j].UpdatedAt)
		}
		return want[i].ID < want[j].ID
	})

	var got []store.ThreadSummary
	cur, pages := "", 0
	for {
		page, next, err := s.Threads(ctx, cur, 10)
		if err != nil {
			t.Fatalf("Threads(page %d): %v", pages, err)
		}
		pages++
		got = append(got, page...)
		if pages == 1 {
			// A thread touched while a client pages must not shift the pages it has not read yet.
			mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: "zz-new", Status: store.StatusRunning, UpdatedAt: base().Add(time.Hour)}})
		}
		if next == "" {
			break
		}
		if pages > n {
			t.Fatal("paging does not end")
		}
		cur = next
	}
	if pages != 3 {
		t.Errorf("got %d pages of 10 for %d threads, want 3", pages, n)
	}
	if len(got) != len(want) {
		t.Fatalf("paged %d threads, want %d: %v", len(got), len(want), idsOf(got))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Title != w.Title || g.Status != w.Status || !near(g.CreatedAt, w.CreatedAt) || !near(g.UpdatedAt, w.UpdatedAt) {
			t.Fatalf("position %d = %+v, want %+v (order %v)", i, g, w, idsOf(got))
		}
	}

	all, next, err := s.Threads(ctx, "", 0)
	if err != nil || next != "" || len(all) != n+1 || all[0].ID != "zz-new" {
		t.Errorf("Threads(default limit) = %d threads, next %q, err %v", len(all), next, err)
	}
	for _, bad := range []string{"garbage!", "e30", "MTIz"} {
		if _, _, err := s.Threads(ctx, bad, 10); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("Threads(cursor %q) error = %v, want ErrInvalidCursor", bad, err)
		}
	}
}

func testThreadsWithStatus(t *testing.T, s store.Store) {
	ctx := t.Context()
	for id, status := range map[string]string{"c": store.StatusRunning, "a": store.StatusRunning, "b": store.StatusDone} {
		mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: id, Status: status}})
	}
	tests := []struct {
		status string
		want   []string
	}{
		{store.StatusRunning, []string{"a", "c"}},
		{store.StatusDone, []string{"b"}},
		{store.StatusFailed, nil},
	}
	for _, tt := range tests {
		got, err := s.ThreadsWithStatus(ctx, tt.status)
		if err != nil {
			t.Fatalf("ThreadsWithStatus(%s): %v", tt.status, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("ThreadsWithStatus(%s) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func testDeleteThread(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, id := range []string{"d", "keep"} {
		mustCommit(t, s, store.Commit{
			Thread: &store.Thread{ID: id, Status: store.StatusDone}, Events: chunkEvents(1, 3, "m"),
			CheckpointID: id + "-commit", Checkpoint: []byte("linked"),
		})
		if err := s.Set(ctx, id, []byte("by id")); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // deleting twice is fine
		if err := s.DeleteThread(ctx, "d"); err != nil {
			t.Fatalf("DeleteThread: %v", err)
		}
	}
	if err := s.DeleteThread(ctx, "never-existed"); err != nil {
		t.Fatalf("DeleteThread(missing): %v", err)
	}
	if _, err := s.Thread(ctx, "d"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted thread: %v", err)
	}
	if evs, err := s.Events(ctx, "d", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("events of deleted thread: %d, %v", len(evs), err)
	}
	for _, id := range []string{"d", "d-commit"} {
		if _, ok, err := s.Get(ctx, id); err != nil || ok {
			t.Errorf("checkpoint %q of deleted thread still there (err %v)", id, err)
		}
	}
	if got := mustThread(t, s, "keep"); got.LastSeq != 3 {
		t.Errorf("other thread: %+v", got)
	}
	checkEvents(t, s, "keep", chunkEvents(1, 3, "m"))
	for _, id := range []string{"keep", "keep-commit"} {
		if _, ok, err := s.Get(ctx, id); err != nil || !ok {
			t.Errorf("checkpoint %q of the other thread gone (err %v)", id, err)
		}
	}
	// The id is free again and its sequence starts over.
	mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: "d", Status: store.StatusRunning}, Events: chunkEvents(1, 1, "m")})
}

func testCompactEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	chunk := func(seq int64, agent, id, content, extra string) store.Event {
		return ev(seq, "message_chunk", fmt.Sprintf(`{"thread_id":"t","agent":%q,"id":%q,"role":"assistant","content":%q%s}`, agent, id, content, extra))
	}
	toolCalls := ev(4, "tool_calls", `{"thread_id":"t","agent":"planner","id":"m1","tool_calls":[{"name":"web_search","args":{"q":"x"}}]}`)
	result := ev(7, "tool_call_result", `{"thread_id":"t","agent":"researcher","id":"r1","tool_call_id":"c1","content":"found <b>it</b>"}`)
	in := []store.Event{
		chunk(1, "planner", "m1", "Hel", `,"reasoning_content":"think "`),
		chunk(2, "planner", "m1", "lo", `,"reasoning_content":"harder"`),
		chunk(3, "planner", "m1", " <world>", `,"finish_reason":"stop"`),
		toolCalls,
		chunk(5, "researcher", "m2", "a", ""),
		chunk(6, "researcher", "m2", "b", `,"finish_reason":"tool_calls"`),
		result,
		chunk(8, "reporter", "m3", "x", ""),
		chunk(9, "reporter", "m4", "y", ""),
		chunk(10, "reporter", "m4", "z", `,"finish_reason":"stop"`),
		ev(11, "done", `{"thread_id":"t"}`),
	}
	mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: "t", Status: store.StatusDone}, Events: in})
	if err := s.CompactEvents(ctx, "t", 0, 11); err != nil {
		t.Fatalf("CompactEvents: %v", err)
	}
	got, err := s.Events(ctx, "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if seqs, want := seqsOf(got), []int64{3, 4, 6, 7, 8, 10, 11}; !slices.Equal(seqs, want) {
		t.Fatalf("seqs after compaction = %v, want %v", seqs, want)
	}
	wantData := map[int64]map[string]any{
		3:  {"thread_id": "t", "agent": "planner", "id": "m1", "role": "assistant", "content": "Hello <world>", "reasoning_content": "think harder", "finish_reason": "stop"},
		6:  {"thread_id": "t", "agent": "researcher", "id": "m2", "role": "assistant", "content": "ab", "finish_reason": "tool_calls"},
		10: {"thread_id": "t", "agent": "reporter", "id": "m4", "role": "assistant", "content": "yz", "finish_reason": "stop"},
	}
	for _, e := range got {
		orig := in[e.Seq-1]
		if e.Type != orig.Type || !near(e.At, orig.At) {
			t.Errorf("seq %d: type %q at %v, want %q at %v", e.Seq, e.Type, e.At, orig.Type, orig.At)
		}
		want, merged := wantData[e.Seq]
		if !merged {
			if !bytes.Equal(e.Data, orig.Data) {
				t.Errorf("seq %d changed: %s, want %s", e.Seq, e.Data, orig.Data)
			}
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(e.Data, &m); err != nil || !reflect.DeepEqual(m, want) {
			t.Errorf("seq %d = %s (%v), want %v", e.Seq, e.Data, err, want)
		}
	}
	if before, after := transcript(in), transcript(got); !reflect.DeepEqual(before, after) {
		t.Errorf("replayed text changed:\n%v\n%v", before, after)
	}
	if th := mustThread(t, s, "t"); th.LastSeq != 11 {
		t.Errorf("LastSeq after compaction = %d, want 11", th.LastSeq)
	}
	// Compaction is idempotent and the sequence continues afterwards.
	if err := s.CompactEvents(ctx, "t", 0, 11); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, store.Commit{ThreadID: "t", Events: chunkEvents(12, 1, "m9")})
	if err := s.CompactEvents(ctx, "missing", 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CompactEvents(missing) error = %v, want ErrNotFound", err)
	}
}

func testCompactEventsRange(t *testing.T, s store.Store) {
	ctx := t.Context()
	in := chunkEvents(1, 6, "m1") // contents c1..c6
	mustCommit(t, s, store.Commit{Thread: &store.Thread{ID: "t", Status: store.StatusDone}, Events: in})
	if err := s.CompactEvents(ctx, "t", 2, 4); err != nil {
		t.Fatalf("CompactEvents: %v", err)
	}
	got, err := s.Events(ctx, "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if seqs, want := seqsOf(got), []int64{1, 2, 4, 5, 6}; !slices.Equal(seqs, want) {
		t.Fatalf("seqs = %v, want %v", seqs, want)
	}
	for _, e := range got {
		if e.Seq != 4 && !bytes.Equal(e.Data, in[e.Seq-1].Data) {
			t.Errorf("seq %d outside the range changed: %s", e.Seq, e.Data)
		}
	}
	if before, after := transcript(in), transcript(got); !reflect.DeepEqual(before, after) {
		t.Errorf("replayed text changed: %v -> %v", before, after)
	}
}

func testPruneBefore(t *testing.T, s store.Store) {
	ctx := t.Context()
	old := base().Add(-48 * time.Hour)
	for _, id := range []string{"old1", "old2", "new"} {
		at := old
		if id == "new" {
			at = base()
		}
		mustCommit(t, s, store.Commit{
			Thread: &store.Thread{ID: id, Status: store.StatusDone, CreatedAt: at, UpdatedAt: at}, Events: chunkEvents(1, 2, "m"),
			CheckpointID: id + "-commit", Checkpoint: []byte("c"),
		})
		if err := s.Set(ctx, id, []byte("by id")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneBefore(ctx, base().Add(-time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneBefore = %d, %v; want 2", n, err)
	}
	for _, id := range []string{"old1", "old2"} {
		if _, err := s.Thread(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pruned thread %s: %v", id, err)
		}
		if evs, err := s.Events(ctx, id, 0, 0); err != nil || len(evs) != 0 {
			t.Errorf("events of pruned thread %s: %d, %v", id, len(evs), err)
		}
		for _, cp := range []string{id, id + "-commit"} {
			if _, ok, err := s.Get(ctx, cp); err != nil || ok {
				t.Errorf("checkpoint %s of pruned thread kept (err %v)", cp, err)
			}
		}
	}
	if got := mustThread(t, s, "new"); got.LastSeq != 2 {
		t.Errorf("kept thread: %+v", got)
	}
	for _, cp := range []string{"new", "new-commit"} {
		if _, ok, err := s.Get(ctx, cp); err != nil || !ok {
			t.Errorf("checkpoint %s of kept thread gone (err %v)", cp, err)
		}
	}
	if n, err := s.PruneBefore(ctx, base().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("second PruneBefore = %d, %v; want 0", n, err)
	}
}

func testConcurrentCommits(t *testing.T, s store.Store) {
	ctx := t.Context()
	const (
		writers = 8
		commits = 20
		per     = 4
	)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprint("c", w)
			for i := range commits {
				c := store.Commit{ThreadID: id, Events: chunkEvents(int64(i*per+1), per, fmt.Sprint("m", i))}
				if i%2 == 0 {
					c.Thread = &store.Thread{ID: id, Title: fmt.Sprint("commit ", i), Status: store.StatusRunning}
					c.CheckpointID, c.Checkpoint = id, fmt.Appendf(nil, "cp %d", i)
				}
				if err := s.Commit(ctx, c); err != nil {
					errs[w] = fmt.Errorf("commit %d: %w", i, err)
					return
				}
			}
		})
	}
	// Readers run beside the writers and stop once they are done.
	done := make(chan struct{})
	var readers sync.WaitGroup
	readErrs := make([]error, 2)
	for r := range readErrs {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := s.Threads(ctx, "", 5); err != nil {
					readErrs[r] = err
					return
				}
				if _, err := s.Events(ctx, fmt.Sprint("c", r), 0, 10); err != nil {
					readErrs[r] = err
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if err := errors.Join(append(errs, readErrs...)...); err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		id := fmt.Sprint("c", w)
		if th := mustThread(t, s, id); th.LastSeq != commits*per || th.Title != fmt.Sprint("commit ", commits-2) {
			t.Errorf("%s: LastSeq %d title %q", id, th.LastSeq, th.Title)
		}
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, e.Seq)
			}
		}
		if len(evs) != commits*per {
			t.Errorf("%s: %d events, want %d", id, len(evs), commits*per)
		}
	}
}

func testReopen(t *testing.T, s store.Store, reopen func(t *testing.T, s store.Store) store.Store) {
	ctx := t.Context()
	th := &store.Thread{
		ID: "p", Title: "persist", Status: store.StatusInterrupted, State: json.RawMessage(`{"k":[1,2,3]}`),
		Interrupt: json.RawMessage(`{"id":"i"}`), Error: "boom", CreatedAt: base(), UpdatedAt: base().Add(time.Nanosecond * 1500),
	}
	evs := chunkEvents(1, 5, "m")
	mustCommit(t, s, store.Commit{Thread: th, Events: evs, CheckpointID: "p", Checkpoint: []byte("saved")})
	s = reopen(t, s)
	want := *th
	want.LastSeq = 5
	checkThread(t, mustThread(t, s, "p"), &want)
	checkEvents(t, s, "p", evs)
	if cp, ok, err := s.Get(ctx, "p"); err != nil || !ok || string(cp) != "saved" {
		t.Fatalf("checkpoint after reopen = %q, %v, %v", cp, ok, err)
	}
	mustCommit(t, s, store.Commit{ThreadID: "p", Events: chunkEvents(6, 1, "m")})
}

// --- helpers ---

func ev(seq int64, typ, data string) store.Event {
	return store.Event{Seq: seq, Type: typ, Data: json.RawMessage(data), At: base().Add(time.Duration(seq) * time.Millisecond)}
}

// chunkEvents returns n message_chunk events of message id starting at seq from, with contents c<seq>.
func chunkEvents(from int64, n int, id string) []store.Event {
	out := make([]store.Event, n)
	for i := range out {
		seq := from + int64(i)
		out[i] = ev(seq, "message_chunk", fmt.Sprintf(`{"thread_id":"t","agent":"researcher","id":%q,"role":"assistant","content":"c%d"}`, id, seq))
	}
	return out
}

func mustCommit(t *testing.T, s store.Store, c store.Commit) {
	t.Helper()
	if err := s.Commit(context.WithoutCancel(t.Context()), c); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func mustThread(t *testing.T, s store.Store, id string) *store.Thread {
	t.Helper()
	th, err := s.Thread(t.Context(), id)
	if err != nil {
		t.Fatalf("Thread(%q): %v", id, err)
	}
	return th
}

func checkThread(t *testing.T, got, want *store.Thread) {
	t.Helper()
	if got.ID != want.ID || got.Title != want.Title || got.Status != want.Status || got.Error != want.Error || got.LastSeq != want.LastSeq {
		t.Errorf("thread = %+v\nwant     %+v", got, want)
	}
	if !bytes.Equal(got.State, want.State) {
		t.Errorf("state = %s, want %s (byte for byte)", got.State, want.State)
	}
	if !bytes.Equal(got.Interrupt, want.Interrupt) {
		t.Errorf("interrupt = %s, want %s", got.Interrupt, want.Interrupt)
	}
	if !near(got.CreatedAt, want.CreatedAt) || !near(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("times = %v / %v, want %v / %v", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
}

func checkEvents(t *testing.T, s store.Store, threadID string, want []store.Event) {
	t.Helper()
	got, err := s.Events(t.Context(), threadID, 0, 0)
	if err != nil {
		t.Fatalf("Events(%q): %v", threadID, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Events(%q) = seqs %v, want %v", threadID, seqsOf(got), seqsOf(want))
	}
	for i := range want {
		checkEvent(t, got[i], want[i])
	}
}

func checkEvent(t *testing.T, got, want store.Event) {
	t.Helper()
	if got.Seq != want.Seq || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) || !near(got.At, want.At) {
		t.Errorf("event = {%d %s %s %v}, want {%d %s %s %v}", got.Seq, got.Type, got.Data, got.At, want.Seq, want.Type, want.Data, want.At)
	}
}

// near compares stored times: PostgreSQL keeps microseconds, SQLite nanoseconds.
func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Microsecond && d < time.Microsecond
}

func seqsOf(evs []store.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func idsOf(ts []store.ThreadSummary) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// transcript is what a client replaying the log would show: every message's text, concatenated per message.
func transcript(evs []store.Event) map[string]string {
	out := map[string]string{}
	for _, e := range evs {
		var m struct {
			ID        string `json:"id"`
			Content   string `json:"content"`
			Reasoning string `json:"reasoning_content"`
		}
		if e.Type != "message_chunk" || json.Unmarshal(e.Data, &m) != nil {
			continue
		}
		out[m.ID] += m.Content
		out[m.ID+"/reasoning"] += m.Reasoning
	}
	return out
}
