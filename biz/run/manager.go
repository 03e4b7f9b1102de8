// Package run owns research runs: it turns a validated chat request into a new run or the resumption of a paused
// one, keeps each thread's conversation memory, guarantees one run per thread, and ends every run's event stream
// with its last message, an interrupt or an error.
package run

import (
	"context"
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
)

// Errors the handler maps to HTTP statuses.
var (
	ErrBusy      = errors.New("a run is already in progress on this thread")
	ErrNoPending = errors.New("no plan review is waiting on this thread")
)

// Engine runs the research graph.
type Engine interface {
	Run(ctx context.Context, in *model.State) (*model.State, *graph.Pause, error)
	Resume(ctx context.Context, threadID, interruptID, answer string) (*model.State, *graph.Pause, error)
}

// Options tune the manager.
type Options struct {
	RunTimeout time.Duration // whole run; default 30 min
	MaxThreads int           // threads kept in memory; the least recently used idle ones are forgotten; default 1000
	Logger     *slog.Logger
	Now        func() time.Time
}

// Manager owns the runs and the per-thread memory.
type Manager struct {
	eng  Engine
	opts Options
	mu   sync.Mutex
	th   map[string]*thread
}

type thread struct {
	state   *model.State // conversation memory and the latest snapshot of the research
	pause   *graph.Pause // pending interrupt, if any
	running bool
	used    time.Time
}

// New returns a manager.
func New(eng Engine, opts Options) *Manager {
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = 30 * time.Minute
	}
	if opts.MaxThreads <= 0 {
		opts.MaxThreads = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{eng: eng, opts: opts, th: map[string]*thread{}}
}

// Request is a validated chat request.
type Request struct {
	ThreadID string
	Text     string
	Feedback string // interrupt_feedback, lower-cased
	Settings model.Settings
}

// Stream is a run in progress as seen by its reader.
type Stream struct {
	q    *queue
	done chan struct{}
}

// Next blocks until events are available or the run ended. It returns done=true once every event was delivered.
func (s *Stream) Next(ctx context.Context) (evs []model.Event, done bool, err error) {
	for {
		evs, done = s.q.drain()
		if len(evs) > 0 || done {
			return evs, done, nil
		}
		select {
		case <-s.q.wake:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Wake is signalled when events may be available.
func (s *Stream) Wake() <-chan struct{} { return s.q.wake }

// Drain returns pending events without blocking.
func (s *Stream) Drain() ([]model.Event, bool) { return s.q.drain() }

// Done is closed when the run goroutine has returned.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Start begins (or resumes) a run. The run lives as long as ctx: cancelling it cancels the run. The returned stream
// yields the run's events and ends after the last one.
func (m *Manager) Start(ctx context.Context, req Request) (*Stream, error) {
	m.mu.Lock()
	t := m.th[req.ThreadID]
	if t == nil {
		t = &thread{used: m.opts.Now()}
		m.evictLocked()
		m.th[req.ThreadID] = t
	}
	if t.running {
		m.mu.Unlock()
		return nil, ErrBusy
	}
	resume, answer := resumeAnswer(req, t.pause)
	if req.Feedback != "" && (req.Feedback == "accepted" || req.Feedback == "edit_plan") && !req.Settings.AutoAcceptedPlan && t.pause == nil {
		m.mu.Unlock()
		return nil, ErrNoPending
	}
	var in *model.State
	var pause *graph.Pause
	if resume {
		pause = t.pause
	} else {
		in = newRunState(t.state, req)
	}
	t.running = true
	t.used = m.opts.Now()
	m.mu.Unlock()

	s := &Stream{q: newQueue(), done: make(chan struct{})}
	go m.execute(ctx, req, in, pause, answer, s)
	return s, nil
}

// resumeAnswer decides whether a request answers the pending plan review, and with what. deer-flow resumes with
// "[<interrupt_feedback>] <text>"; a message that itself starts with [ACCEPTED] or [EDIT_PLAN] is accepted too.
func resumeAnswer(req Request, pending *graph.Pause) (bool, string) {
	if pending == nil {
		return false, ""
	}
	if req.Feedback != "" && !req.Settings.AutoAcceptedPlan {
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
	s.Outcome, s.Err = "", ""
	return s
}

func (m *Manager) execute(parent context.Context, req Request, in *model.State, pause *graph.Pause, answer string, s *Stream) {
	defer close(s.done)
	defer s.q.close()
	em := stream.New(req.ThreadID, s.q.push)
	ctx, cancel := context.WithTimeout(parent, m.opts.RunTimeout)
	defer cancel()
	var latest *model.State
	var latestMu sync.Mutex
	ctx = stream.WithEmitter(ctx, em)
	ctx = graph.WithObserver(ctx, func(st *model.State) {
		latestMu.Lock()
		latest = st
		latestMu.Unlock()
	})

	var (
		final *model.State
		p     *graph.Pause
		err   error
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				m.opts.Logger.Error("run panicked", "thread_id", req.ThreadID, "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		if pause != nil {
			final, p, err = m.eng.Resume(ctx, req.ThreadID, pause.ID, answer)
		} else {
			final, p, err = m.eng.Run(ctx, in)
		}
	}()

	latestMu.Lock()
	snap := latest
	latestMu.Unlock()
	m.mu.Lock()
	t := m.th[req.ThreadID]
	if t == nil { // evicted meanwhile
		t = &thread{}
		m.th[req.ThreadID] = t
	}
	t.running = false
	t.used = m.opts.Now()
	t.pause = nil
	switch {
	case final != nil:
		t.state = final
	case snap != nil:
		t.state = snap
	case in != nil && t.state == nil:
		t.state = in
	}
	if err == nil && p != nil {
		t.pause = p
	}
	m.mu.Unlock()

	switch {
	case err != nil && parent.Err() != nil:
		em.Error("Stream cancelled", "cancelled")
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		em.Error(fmt.Sprintf("the run did not finish within %s", m.opts.RunTimeout), "timeout")
	case err != nil:
		m.opts.Logger.Warn("run failed", "thread_id", req.ThreadID, "err", err)
		em.Error(cleanError(err), "")
	case p != nil:
		em.Interrupt(p.ID, p.Content, p.Options)
	case final != nil:
		em.Citations(final.Citations)
	}
}

// cleanError strips the graph engine's wrapping from an error for the client.
func cleanError(err error) string {
	msg := err.Error()
	// Eino prefixes node errors with its own bookkeeping; the cause the user can act on is at the end.
	if i := strings.LastIndex(msg, "[NodeRunError] "); i >= 0 {
		msg = msg[i+len("[NodeRunError] "):]
	}
	if i := strings.Index(msg, "\n------------------------\n"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// Snapshot returns a copy of a thread's latest state, or nil.
func (m *Manager) Snapshot(threadID string) *model.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.th[threadID]; t != nil && t.state != nil {
		return t.state.Clone()
	}
	return nil
}

func (m *Manager) evictLocked() {
	for len(m.th) >= m.opts.MaxThreads {
		var oldest string
		var at time.Time
		for id, t := range m.th {
			if t.running {
				continue
			}
			if oldest == "" || t.used.Before(at) {
				oldest, at = id, t.used
			}
		}
		if oldest == "" {
			return
		}
		delete(m.th, oldest)
	}
}
