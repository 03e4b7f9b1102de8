// Package run owns research runs. A run is started (or resumed) by a request but lives independently of it: the
// manager keeps its event log, persists it with the thread record and the graph's checkpoints, and lets any number of
// readers follow it from any point. One run per thread; every run's log ends with its last message, an interrupt or
// an error.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/deer-go/deer-go/biz/graph"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
	"github.com/deer-go/deer-go/infra/store"
)

// Errors the handlers map to HTTP statuses.
var (
	ErrBusy         = errors.New("a run is already in progress on this thread")
	ErrNoPending    = errors.New("no plan review is waiting on this thread")
	ErrNotResumable = errors.New("this thread has no interrupted run to resume")
	ErrNotRunning   = errors.New("no run is in progress on this thread")
	ErrNotFound     = errors.New("thread not found")
	ErrClosed       = errors.New("the server is shutting down")
)

// Causes of a run's cancellation.
var (
	errCancelled = errors.New("cancelled by the user")
	errShutdown  = errors.New("server shutdown")
)

// Engine runs the research graph.
type Engine interface {
	Run(ctx context.Context, in *model.State) (*model.State, *graph.Pause, error)
	Resume(ctx context.Context, threadID, interruptID, answer string) (*model.State, *graph.Pause, error)
}

// Store is what the manager needs from storage.
type Store interface {
	Get(ctx context.Context, id string) ([]byte, bool, error)
	Set(ctx context.Context, id string, cp []byte) error
	Commit(ctx context.Context, c store.Commit) error
	Thread(ctx context.Context, id string) (*store.Thread, error)
	Threads(ctx context.Context, cursor string, limit int) ([]store.ThreadSummary, string, error)
	ThreadsWithStatus(ctx context.Context, status string) ([]string, error)
	Events(ctx context.Context, threadID string, after int64, limit int) ([]store.Event, error)
	DeleteThread(ctx context.Context, id string) error
	CompactEvents(ctx context.Context, threadID string, after, upTo int64) error
	PruneBefore(ctx context.Context, t time.Time) (int, error)
}

// Options tune the manager.
type Options struct {
	RunTimeout   time.Duration // whole run; default 30 min
	MaxLogEvents int           // events of a run kept in memory beyond what is stored; default 4096
	FlushEvery   time.Duration // how often streamed events are written between snapshots; default 500ms
	// CompactAfter is how long after a run ends its event log is compacted (readers reconnecting within that time
	// get the events exactly as streamed); default 10 min; negative disables compaction.
	CompactAfter time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Manager owns the runs.
type Manager struct {
	eng   Engine
	store Store
	opts  Options
	base  context.Context // parent of every run; cancelled at the end of Shutdown
	stop  context.CancelCauseFunc
	drain chan struct{}

	mu      sync.Mutex
	runs    map[string]*active
	closed  bool
	wg      sync.WaitGroup // run goroutines and delayed compactions
	timers  map[*time.Timer]struct{}
	drainMu sync.Once
}

// New returns a manager. cps (may be nil) is the checkpoint store the graph was compiled with. Call Recover once
// before serving.
func New(eng Engine, st Store, cps *Checkpoints, opts Options) *Manager {
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = 30 * time.Minute
	}
	if opts.MaxLogEvents <= 0 {
		opts.MaxLogEvents = 4096
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 500 * time.Millisecond
	}
	if opts.CompactAfter == 0 {
		opts.CompactAfter = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	base, stop := context.WithCancelCause(context.Background())
	m := &Manager{eng: eng, store: st, opts: opts, base: base, stop: stop, drain: make(chan struct{}),
		runs: map[string]*active{}, timers: map[*time.Timer]struct{}{}}
	if cps != nil {
		cps.mu.Lock()
		cps.m = m
		cps.mu.Unlock()
	}
	return m
}

// Checkpoints is the graph's checkpoint store: a checkpoint of a running thread is written in one transaction with
// the events that led to it. It is created before the graph (which needs it) and bound to the manager by New.
type Checkpoints struct {
	st Store
	mu sync.Mutex
	m  *Manager
}

// NewCheckpoints returns the checkpoint store to compile the graph with.
func NewCheckpoints(st Store) *Checkpoints { return &Checkpoints{st: st} }

// Get loads a checkpoint.
func (c *Checkpoints) Get(ctx context.Context, id string) ([]byte, bool, error) {
	return c.st.Get(ctx, id)
}

// Set saves a checkpoint, together with the pending events of the thread's run.
func (c *Checkpoints) Set(ctx context.Context, id string, cp []byte) error {
	c.mu.Lock()
	m := c.m
	c.mu.Unlock()
	var a *active
	if m != nil {
		m.mu.Lock()
		a = m.runs[id]
		m.mu.Unlock()
	}
	if a == nil {
		return c.st.Set(ctx, id, cp)
	}
	return a.commit(ctx, nil, id, cp)
}

// Request is a validated chat request.
type Request struct {
	ThreadID string
	Text     string
	Feedback string // interrupt_feedback, lower-cased
	Settings model.Settings
	// AttachAfter, when Text is empty, asks to follow the thread's running run from this sequence number.
	AttachAfter int64
}

// Started describes a run that Start began or found.
type Started struct {
	ThreadID string
	From     int64 // read the thread's events after this sequence number
	Attached bool  // the request attached to a run already in progress
}

// Start begins a new run, resumes a paused or interrupted one, or (for a request without new input) attaches to
// the run in progress.
func (m *Manager) Start(ctx context.Context, req Request) (Started, error) {
	rec, err := m.store.Thread(ctx, req.ThreadID)
	if errors.Is(err, store.ErrNotFound) {
		rec, err = &store.Thread{ID: req.ThreadID, CreatedAt: m.opts.Now()}, nil
	}
	if err != nil {
		return Started{}, fmt.Errorf("load thread: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Started{}, ErrClosed
	}
	if a := m.runs[req.ThreadID]; a != nil {
		if strings.TrimSpace(req.Text) == "" {
			from := req.AttachAfter
			if from <= 0 {
				from = a.firstSeq - 1
			}
			return Started{ThreadID: req.ThreadID, From: from, Attached: true}, nil
		}
		return Started{}, ErrBusy
	}
	var prev *model.State
	if len(rec.State) > 0 {
		prev = &model.State{}
		if err := json.Unmarshal(rec.State, prev); err != nil {
			return Started{}, fmt.Errorf("decode thread state: %w", err)
		}
	}
	pause := decodePause(rec.Interrupt)
	var (
		in     *model.State
		resume *graph.Pause
		answer string
	)
	switch {
	case req.Feedback == "resume":
		if rec.Status != store.StatusInterrupted || prev == nil {
			return Started{}, ErrNotResumable
		}
		in = prev.Clone()
		recoverSteps(in)
	default:
		ok, ans := resumeAnswer(req, pause)
		switch {
		case ok:
			resume, answer = pause, ans
		case (req.Feedback == "accepted" || req.Feedback == "edit_plan" || req.Feedback == "approved" || req.Feedback == "rejected") &&
			!req.Settings.AutoAcceptedPlan:
			return Started{}, ErrNoPending
		case strings.TrimSpace(req.Text) == "":
			return Started{}, ErrNotRunning
		default:
			in = newRunState(prev, req)
		}
	}
	rec.Status = store.StatusRunning
	rec.Interrupt = nil
	rec.Error = ""
	if in != nil {
		if b, err := json.Marshal(in); err == nil {
			rec.State = b
		}
		if t := threadTitle(in); t != "" && rec.Title == "" {
			rec.Title = t
		}
	}
	runCtx, cancel := context.WithCancelCause(m.base)
	a := newActive(m, *rec, cancel)
	// The thread is marked running before the run starts, so a crash from here on is found by Recover.
	if err := a.commit(ctx, nil, "", nil); err != nil {
		cancel(err)
		return Started{}, err
	}
	m.runs[req.ThreadID] = a
	m.wg.Add(1)
	go m.execute(runCtx, a, in, resume, answer)
	return Started{ThreadID: req.ThreadID, From: a.firstSeq - 1}, nil
}

// recoverSteps prepares a state cut off mid-run: a step that was running restarts; finished steps stay finished.
func recoverSteps(s *model.State) {
	if s.Next == "" {
		s.Next = model.AgentCoordinator
	}
	settleSteps(s)
	s.Outcome, s.Err = "", ""
}

// settleSteps puts steps that were running when a run stopped back to pending: nothing is working on them any more,
// and the research team hands them out again when the run resumes.
func settleSteps(s *model.State) {
	if s.Plan == nil {
		return
	}
	for i := range s.Plan.Steps {
		if s.Plan.Steps[i].Status == model.StatusRunning {
			s.Plan.Steps[i].Status = model.StatusPending
		}
	}
}

// resumeAnswer decides whether a request answers the pending plan review, and with what. deer-flow resumes with
// "[<interrupt_feedback>] <text>"; a message that itself starts with [ACCEPTED] or [EDIT_PLAN] is accepted too.
func resumeAnswer(req Request, pending *graph.Pause) (bool, string) {
	if pending == nil {
		return false, ""
	}
	if pending.Kind == graph.KindToolApproval {
		// Tool approval: accepted/approved run the call, rejected refuses it (auto_accepted_plan does not apply).
		switch req.Feedback {
		case "accepted", "approved", "rejected":
			return true, req.Feedback + " " + req.Text
		}
		return false, ""
	}
	if (req.Feedback == "accepted" || req.Feedback == "edit_plan") && !req.Settings.AutoAcceptedPlan {
		return true, "[" + req.Feedback + "] " + req.Text
	}
	up := strings.ToUpper(strings.TrimSpace(req.Text))
	if strings.HasPrefix(up, "[ACCEPTED]") || strings.HasPrefix(up, "[EDIT_PLAN]") {
		return true, strings.TrimSpace(req.Text)
	}
	return false, ""
}

// newRunState starts a new research on a thread: the conversation and clarification progress carry over, the
// previous research's plan and results do not.
func newRunState(prev *model.State, req Request) *model.State {
	s := &model.State{}
	if prev != nil {
		s = prev.Clone()
	}
	s.ThreadID = req.ThreadID
	s.Settings = req.Settings
	s.Locale = req.Settings.Locale
	s.Messages = append(s.Messages, model.Message{Role: "user", Content: req.Text})
	if prev != nil && prev.Outcome == "clarifying" {
		s.ClarificationHistory = append(s.ClarificationHistory, req.Text)
	} else {
		s.ClarificationHistory = []string{req.Text}
		s.ClarificationRounds = 0
		s.ClarificationDone = false
	}
	s.ResearchTopic = req.Text
	s.Plan, s.PriorSteps, s.PlanIterations, s.PlanFeedback = nil, nil, 0, ""
	s.BackgroundResults, s.FinalReport, s.Citations = "", "", nil
	s.Outcome, s.Err, s.Next = "", "", ""
	return s
}

func (m *Manager) execute(ctx context.Context, a *active, in *model.State, pause *graph.Pause, answer string) {
	defer m.wg.Done()
	defer close(a.finished)
	em := stream.New(a.threadID, a.append)
	runCtx, cancel := context.WithTimeout(ctx, m.opts.RunTimeout)
	defer cancel()
	runCtx = stream.WithEmitter(runCtx, em)
	runCtx = graph.WithDrain(runCtx, m.drain)
	var (
		latestMu sync.Mutex
		latest   *model.State
	)
	runCtx = graph.WithObserver(runCtx, func(st *model.State) {
		latestMu.Lock()
		latest = st
		latestMu.Unlock()
		a.snapshot(runCtx, st)
	})
	flushDone := make(chan struct{})
	flushStop := make(chan struct{})
	go func() { // streamed tokens reach the store between snapshots too
		defer close(flushDone)
		t := time.NewTicker(m.opts.FlushEvery)
		defer t.Stop()
		for {
			select {
			case <-flushStop:
				return
			case <-t.C:
				if err := a.commit(runCtx, nil, "", nil); err != nil {
					m.opts.Logger.Warn("flush events", "thread_id", a.threadID, "err", err)
				}
			}
		}
	}()

	var (
		final *model.State
		p     *graph.Pause
		err   error
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				m.opts.Logger.Error("run panicked", "thread_id", a.threadID, "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		if pause != nil {
			final, p, err = m.eng.Resume(runCtx, a.threadID, pause.ID, answer)
		} else {
			final, p, err = m.eng.Run(runCtx, in)
		}
	}()
	close(flushStop)
	<-flushDone

	latestMu.Lock()
	snap := latest
	latestMu.Unlock()
	if final != nil {
		snap = final
	}
	status, errText := store.StatusDone, ""
	cause := context.Cause(ctx)
	switch {
	case err == nil && p != nil:
		status = store.StatusWaitingForReview
		em.Interrupt(p.ID, p.Content, p.Options)
	case err == nil:
		if final != nil {
			em.Citations(final.Citations)
		}
	case errors.Is(err, graph.ErrDrained) || errors.Is(cause, errShutdown):
		status, errText = store.StatusInterrupted, "The server restarted during this run. Resume it with interrupt_feedback \"resume\"."
		em.Error(errText, "interrupted")
	case errors.Is(cause, errCancelled) || (ctx.Err() != nil && cause != nil):
		status, errText = store.StatusCancelled, "Run cancelled"
		em.Error(errText, "cancelled")
	case runCtx.Err() != nil && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		status, errText = store.StatusFailed, fmt.Sprintf("the run did not finish within %s", m.opts.RunTimeout)
		em.Error(errText, "timeout")
	default:
		status, errText = store.StatusFailed, cleanError(err)
		m.opts.Logger.Warn("run failed", "thread_id", a.threadID, "err", err)
		em.Error(errText, "")
	}
	if snap != nil && (status == store.StatusCancelled || status == store.StatusFailed || status == store.StatusInterrupted) {
		snap = snap.Clone()
		settleSteps(snap)
	}
	var stateJSON json.RawMessage
	if snap != nil {
		if b, jerr := json.Marshal(snap); jerr == nil {
			stateJSON = b
		}
	}
	if cerr := a.commit(context.WithoutCancel(ctx), func(r *store.Thread) {
		r.Status, r.Error, r.Interrupt = status, errText, encodePause(p)
		if stateJSON != nil {
			r.State = stateJSON
			if t := threadTitle(snap); t != "" {
				r.Title = t
			}
		}
	}, "", nil); cerr != nil {
		m.opts.Logger.Error("save run end", "thread_id", a.threadID, "err", cerr)
	}
	m.mu.Lock()
	delete(m.runs, a.threadID)
	m.mu.Unlock()
	a.end()
	m.scheduleCompaction(a.threadID, a.firstSeq-1, a.nextSeq-1)
}

// cleanError strips the graph engine's wrapping from an error for the client.
func cleanError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "[NodeRunError] "); i >= 0 {
		msg = msg[i+len("[NodeRunError] "):]
	}
	if i := strings.Index(msg, "\n------------------------\n"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func (m *Manager) scheduleCompaction(threadID string, after, upTo int64) {
	if m.opts.CompactAfter < 0 || upTo <= after {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(m.opts.CompactAfter, func() {
		defer m.wg.Done()
		m.mu.Lock()
		delete(m.timers, t)
		busy := m.runs[threadID] != nil
		m.mu.Unlock()
		if busy {
			return
		}
		if err := m.store.CompactEvents(m.base, threadID, after, upTo); err != nil && !errors.Is(err, context.Canceled) {
			m.opts.Logger.Warn("compact events", "thread_id", threadID, "err", err)
		}
	})
	m.timers[t] = struct{}{}
}

// Cancel stops a thread's run; its stream ends with an error event whose reason is "cancelled".
func (m *Manager) Cancel(threadID string) error {
	m.mu.Lock()
	a := m.runs[threadID]
	m.mu.Unlock()
	if a == nil {
		return ErrNotRunning
	}
	a.cancel(errCancelled)
	<-a.finished
	return nil
}

// Running reports whether a thread has a run in progress.
func (m *Manager) Running(threadID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[threadID] != nil
}

// Shutdown stops accepting runs, lets running ones stop at their next agent boundary (state saved) within grace,
// then cancels whatever is left. Every run's stream ends with an error event saying it can be resumed.
func (m *Manager) Shutdown(ctx context.Context, grace time.Duration) {
	m.mu.Lock()
	m.closed = true
	runs := make([]*active, 0, len(m.runs))
	for _, a := range m.runs {
		runs = append(runs, a)
	}
	for t := range m.timers {
		if t.Stop() {
			m.wg.Done()
		}
		delete(m.timers, t)
	}
	m.mu.Unlock()
	m.drainMu.Do(func() { close(m.drain) })
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, a := range runs {
		select {
		case <-a.finished:
		case <-timer.C:
			for _, b := range runs {
				b.cancel(errShutdown)
			}
		case <-ctx.Done():
			for _, b := range runs {
				b.cancel(errShutdown)
			}
		}
	}
	m.wg.Wait()
	m.stop(errShutdown)
}

// Recover runs once at start-up: threads left "running" by a crash become "interrupted" (their log gets an error
// event saying so). With resume set they are resumed right away.
func (m *Manager) Recover(ctx context.Context, resume bool) error {
	ids, err := m.store.ThreadsWithStatus(ctx, store.StatusRunning)
	if err != nil {
		return fmt.Errorf("find interrupted runs: %w", err)
	}
	for _, id := range ids {
		rec, err := m.store.Thread(ctx, id)
		if err != nil {
			return fmt.Errorf("load thread %s: %w", id, err)
		}
		msg := "The server stopped during this run. Resume it with interrupt_feedback \"resume\"."
		data, err := json.Marshal(model.EventData{ThreadID: id, Error: msg, Reason: "interrupted"})
		if err != nil {
			return err
		}
		rec.Status, rec.Error = store.StatusInterrupted, msg
		rec.UpdatedAt = m.opts.Now()
		ev := store.Event{Seq: rec.LastSeq + 1, Type: model.EventError, Data: data, At: m.opts.Now()}
		rec.LastSeq = ev.Seq
		if err := m.store.Commit(ctx, store.Commit{Thread: rec, Events: []store.Event{ev}}); err != nil {
			return fmt.Errorf("mark thread %s interrupted: %w", id, err)
		}
		m.opts.Logger.Info("run interrupted by a restart", "thread_id", id)
		if resume {
			if _, err := m.Start(ctx, Request{ThreadID: id, Feedback: "resume"}); err != nil {
				m.opts.Logger.Warn("resume on start", "thread_id", id, "err", err)
			}
		}
	}
	return nil
}

// Prune deletes threads not updated within maxAge.
func (m *Manager) Prune(ctx context.Context, maxAge time.Duration) (int, error) {
	return m.store.PruneBefore(ctx, m.opts.Now().Add(-maxAge))
}
