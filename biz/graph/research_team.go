package graph

import (
	"context"

	"github.com/cloudwego/eino/compose"

	dm "github.com/deer-go/deer-go/biz/model"
)

// researchTeam dispatches the next ready step (no model). The chosen step is marked running here, under the state
// lock, so that a scheduler dispatching several steps would never hand one step out twice.
func (g *Graph) researchTeam() (*compose.Graph[string, string], error) {
	return agentGraph(
		func(_ context.Context, _ *dm.State) (struct{}, error) { return struct{}{}, nil },
		func(_ context.Context, in struct{}) (struct{}, error) { return in, nil },
		func(_ context.Context, s *dm.State, _ struct{}) (string, error) {
			next, i := afterResearchTeam(s)
			if i >= 0 {
				s.Plan.Steps[i].Status = dm.StatusRunning
			}
			return next, nil
		},
	)
}
