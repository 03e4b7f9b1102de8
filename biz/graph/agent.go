package graph

import (
	"context"
	"errors"

	"github.com/cloudwego/eino/compose"

	dm "github.com/deer-go/deer-go/biz/model"
)

// agentGraph builds one agent's subgraph: load reads what the agent needs from State (under the state lock),
// agent does the slow work without holding the lock, and route writes the outcome to State and names the next
// agent (under the lock again). Keeping the model call outside the lock lets later versions run steps in parallel.
func agentGraph[T, U any](
	load func(ctx context.Context, s *dm.State) (T, error),
	agent func(ctx context.Context, in T) (U, error),
	route func(ctx context.Context, s *dm.State, out U) (string, error),
) (*compose.Graph[string, string], error) {
	g := compose.NewGraph[string, string]()
	if err := g.AddLambdaNode("load", compose.InvokableLambda(func(ctx context.Context, _ string) (T, error) {
		var in T
		err := compose.ProcessState(ctx, func(ctx context.Context, s *dm.State) error {
			var err error
			in, err = load(ctx, s)
			return err
		})
		return in, err
	})); err != nil {
		return nil, err
	}
	if err := g.AddLambdaNode("agent", compose.InvokableLambda(agent)); err != nil {
		return nil, err
	}
	if err := g.AddLambdaNode("router", compose.InvokableLambda(func(ctx context.Context, out U) (string, error) {
		var next string
		err := compose.ProcessState(ctx, func(ctx context.Context, s *dm.State) error {
			var err error
			next, err = route(ctx, s, out)
			if err != nil {
				return err
			}
			s.Next = next
			observe(ctx, s)
			if next != "" && draining(ctx) {
				// Stop at this boundary: the snapshot just saved is where the run resumes.
				return ErrDrained
			}
			return nil
		})
		return next, err
	})); err != nil {
		return nil, err
	}
	for _, e := range [][2]string{{compose.START, "load"}, {"load", "agent"}, {"agent", "router"}, {"router", compose.END}} {
		if err := g.AddEdge(e[0], e[1]); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// ErrDrained ends a run at an agent boundary because the server is shutting down; the run can be resumed.
var ErrDrained = errors.New("run paused for a server shutdown")

type drainKey struct{}

// WithDrain makes runs under ctx stop at their next agent boundary once drain is closed.
func WithDrain(ctx context.Context, drain <-chan struct{}) context.Context {
	return context.WithValue(ctx, drainKey{}, drain)
}

func draining(ctx context.Context) bool {
	ch, ok := ctx.Value(drainKey{}).(<-chan struct{})
	if !ok {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Observer receives a snapshot of State after every agent's router, so the run manager always knows the latest
// plan, step statuses and citations, including while a run is paused.
type Observer func(*dm.State)

type observerKey struct{}

// WithObserver attaches a state observer to a run's context.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

func observe(ctx context.Context, s *dm.State) {
	if o, ok := ctx.Value(observerKey{}).(Observer); ok && o != nil {
		o(s.Clone())
	}
}
