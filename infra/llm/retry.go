package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

type policy struct {
	timeout     time.Duration // <= 0: unbounded
	maxRetries  int
	baseBackoff time.Duration
	maxBackoff  time.Duration
}

func newPolicy(o Options) policy {
	p := policy{
		timeout:     o.Timeout,
		maxRetries:  o.MaxRetries,
		baseBackoff: o.BaseBackoff,
		maxBackoff:  o.MaxBackoff,
	}
	if p.timeout == 0 {
		p.timeout = defaultTimeout
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = defaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	if p.baseBackoff <= 0 {
		p.baseBackoff = defaultBaseBackoff
	}
	if p.maxBackoff <= 0 {
		p.maxBackoff = defaultMaxBackoff
	}
	return p
}

func (p policy) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, p.timeout)
}

// backoff returns the pause before retry number try (0-based): exponential,
// capped, with the upper half randomised so that parallel callers spread out.
func (p policy) backoff(try int) time.Duration {
	d := p.maxBackoff
	if try < 30 {
		d = min(p.baseBackoff<<try, p.maxBackoff)
	}
	half := d / 2
	return half + rand.N(half+1)
}

// target identifies the endpoint behind a model for error messages.
type target struct {
	role  Role
	model string
	url   string
	env   string
}

// retrying adds timeouts, retries and descriptive errors to a chat model.
type retrying struct {
	inner  model.ToolCallingChatModel
	target target
	policy policy
	log    *slog.Logger
}

var (
	_ model.ToolCallingChatModel = (*retrying)(nil)
	_ components.Typer           = (*retrying)(nil)
	_ components.Checker         = (*retrying)(nil)
)

// GetType reports the wrapped model's type so callbacks label it correctly.
func (m *retrying) GetType() string {
	if t, ok := components.GetType(m.inner); ok {
		return t
	}
	return "OpenAI"
}

// IsCallbacksEnabled defers to the inner model, which already emits
// callbacks; otherwise graphs would report every call twice.
func (m *retrying) IsCallbacksEnabled() bool {
	return components.IsCallbacksEnabled(m.inner)
}

// WithTools returns a retrying copy bound to tools.
func (m *retrying) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	inner, err := m.inner.WithTools(tools)
	if err != nil {
		return nil, fmt.Errorf("llm: bind tools to %s model %q: %w", m.target.role, m.target.model, err)
	}
	c := *m
	c.inner = inner
	return &c, nil
}

// Generate calls the model, retrying transient failures within the timeout.
func (m *retrying) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	callCtx, cancel := m.policy.bound(ctx)
	defer cancel()
	for try := 0; ; try++ {
		a := &attempt{}
		out, err := m.inner.Generate(withAttempt(callCtx, a), in, opts...)
		if err == nil {
			return out, nil
		}
		e := m.classify(ctx, callCtx, a, err)
		wait, ok := m.retryAfter(ctx, callCtx, e, a, try)
		if !ok {
			return nil, e
		}
		if err := m.pause(callCtx, e, try, wait); err != nil {
			return nil, m.interrupted(ctx, callCtx, e, err)
		}
	}
}

// Stream opens a stream, retrying failures that happen before the first
// chunk. Later failures end the returned stream with an *Error. The timeout
// covers the whole stream; closing the reader cancels the request at once.
func (m *retrying) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	callCtx, cancel := m.policy.bound(ctx)
	for try := 0; ; try++ {
		a := &attempt{}
		sr, err := m.inner.Stream(withAttempt(callCtx, a), in, opts...)
		if err == nil {
			first, recvErr := sr.Recv()
			switch {
			case recvErr == nil:
				return m.forward(ctx, callCtx, cancel, a, sr, first), nil
			case errors.Is(recvErr, io.EOF):
				sr.Close()
				cancel()
				return schema.StreamReaderFromArray[*schema.Message](nil), nil
			}
			sr.Close()
			err = recvErr
		}
		e := m.classify(ctx, callCtx, a, err)
		wait, ok := m.retryAfter(ctx, callCtx, e, a, try)
		if !ok {
			cancel()
			return nil, e
		}
		if err := m.pause(callCtx, e, try, wait); err != nil {
			cancel()
			return nil, m.interrupted(ctx, callCtx, e, err)
		}
	}
}

// newError builds an *Error, taking the status seen on the wire when the
// error chain lacks one.
func (m *retrying) newError(a *attempt, status int, err error) *Error {
	e := &Error{
		Role:    m.target.role,
		Model:   m.target.model,
		URL:     m.target.url,
		EnvHint: m.target.env,
		Status:  status,
		Err:     err,
	}
	if a != nil && status == 0 {
		if responded, st, _ := a.snapshot(); responded && st >= 400 {
			e.Status = st
		}
	}
	return e
}

// classify turns a failed attempt into an *Error. parent is the caller's
// context, callCtx the one bounded by the timeout.
func (m *retrying) classify(parent, callCtx context.Context, a *attempt, err error) *Error {
	e := m.newError(a, statusOf(err), err)
	if e.Status != 0 {
		return e
	}
	responded, _, _ := a.snapshot()
	switch {
	case m.timedOut(parent, callCtx):
		e.Err = &timeoutError{after: m.policy.timeout, responded: responded, err: err}
		e.Unreachable = !responded
	case parent.Err() != nil:
		// The caller gave up; that says nothing about the endpoint.
	default:
		e.Unreachable = isDialFailure(err)
	}
	return e
}

// timedOut tells our own deadline apart from the caller's cancellation.
func (m *retrying) timedOut(parent, callCtx context.Context) bool {
	return m.policy.timeout > 0 && parent.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded)
}

// retryAfter decides whether e deserves another attempt and how long to
// wait first.
func (m *retrying) retryAfter(parent, callCtx context.Context, e *Error, a *attempt, try int) (time.Duration, bool) {
	if try >= m.policy.maxRetries || parent.Err() != nil || callCtx.Err() != nil {
		return 0, false
	}
	switch {
	case e.Status == 429 || e.Status >= 500:
	case e.Status != 0:
		return 0, false
	case !isTransient(e.Err):
		return 0, false
	}
	wait := m.policy.backoff(try)
	if e.Status == 429 || e.Status == 503 {
		if _, _, hint := a.snapshot(); hint > 0 {
			if hint > maxRetryAfter {
				return 0, false
			}
			wait = hint
		}
	}
	if deadline, ok := callCtx.Deadline(); ok && time.Until(deadline) <= wait {
		// Waiting would outlive the budget; report the real failure now.
		return 0, false
	}
	return wait, true
}

func (m *retrying) pause(ctx context.Context, e *Error, try int, wait time.Duration) error {
	m.log.WarnContext(ctx, "llm call failed, retrying",
		"role", m.target.role, "model", m.target.model, "url", m.target.url,
		"attempt", try+1, "wait", wait, "status", e.Status, "err", e.Error())
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// interrupted reports a retry wait cut short, keeping the last failure.
func (m *retrying) interrupted(parent, callCtx context.Context, last *Error, ctxErr error) *Error {
	e := *last
	if m.timedOut(parent, callCtx) {
		e.Err = &timeoutError{after: m.policy.timeout, responded: !last.Unreachable, err: errors.Join(last.Err, ctxErr)}
	} else {
		e.Err = errors.Join(last.Err, ctxErr)
	}
	return &e
}

// forward relays inner to the caller. A second, never-consumed-by-the-user
// probe pipe is merged into the returned reader: a blocked send on it
// returns as soon as the reader is closed, which is the only close signal
// eino streams offer, so the request can be cancelled without waiting for
// the next chunk.
func (m *retrying) forward(parent, callCtx context.Context, cancel context.CancelFunc, a *attempt,
	inner *schema.StreamReader[*schema.Message], first *schema.Message) *schema.StreamReader[*schema.Message] {
	dataR, dataW := schema.Pipe[*schema.Message](1)
	probeR, probeW := schema.Pipe[*schema.Message](0)
	armed := make(chan struct{}, 1)
	done := make(chan struct{})
	armed <- struct{}{}

	go func() {
		defer close(done)
		defer dataW.Close()
		defer inner.Close()
		defer cancel()
		msg := first
		for {
			if dataW.Send(msg, nil) {
				return
			}
			select {
			case armed <- struct{}{}:
			default:
			}
			var err error
			msg, err = inner.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				dataW.Send(nil, m.classify(parent, callCtx, a, err))
				return
			}
		}
	}()

	// The watcher sends one probe per delivered chunk, so a reader waiting
	// for data swallows at most one probe instead of spinning.
	go func() {
		defer probeW.Close()
		for {
			select {
			case <-done:
				return
			case <-armed:
			}
			if probeW.Send(nil, nil) {
				cancel()
				return
			}
		}
	}()

	merged := schema.MergeStreamReaders([]*schema.StreamReader[*schema.Message]{dataR, probeR})
	return schema.StreamReaderWithConvert(merged, func(msg *schema.Message) (*schema.Message, error) {
		if msg == nil {
			return nil, schema.ErrNoValue
		}
		return msg, nil
	})
}

// failedModel stands in when a model could not be built, so the error
// surfaces on use.
type failedModel struct{ err error }

func (f failedModel) Generate(context.Context, []*schema.Message, ...model.Option) (*schema.Message, error) {
	return nil, f.err
}

func (f failedModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, f.err
}

func (f failedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return nil, f.err
}
