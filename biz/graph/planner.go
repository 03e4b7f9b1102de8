package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/stream"
)

type plannerIn struct {
	skip     bool // iterations used up: hand over to the reporter without calling the model
	msgs     []*schema.Message
	role     string
	json     bool
	maxSteps int
	locale   string
	topic    string
}

type plannerOut struct {
	skip bool
	plan *dm.Plan
	raw  string
	err  error
}

func (g *Graph) planner() (*compose.Graph[string, string], error) {
	return agentGraph(g.plannerLoad, g.plannerAgent, g.plannerRoute)
}

func (g *Graph) plannerLoad(_ context.Context, s *dm.State) (plannerIn, error) {
	if plannerDone(s) {
		return plannerIn{skip: true}, nil
	}
	sys, err := g.render(dm.AgentPlanner, s)
	if err != nil {
		return plannerIn{}, err
	}
	msgs := []*schema.Message{schema.SystemMessage(sys)}
	if s.Settings.EnableClarification && len(s.ClarificationHistory) > 1 {
		// The clarified topic replaces the back-and-forth of questions.
		msgs = append(msgs, schema.UserMessage(s.ResearchTopic))
	} else {
		msgs = append(msgs, history(s.Messages, 12)...)
		if s.ResearchTopic != "" && s.ResearchTopic != lastUser(s.Messages) {
			msgs = append(msgs, schema.UserMessage("Research topic: "+s.ResearchTopic))
		}
	}
	if s.BackgroundResults != "" {
		msgs = append(msgs, schema.UserMessage("Background investigation results (web search on the topic):\n\n"+s.BackgroundResults))
	}
	if s.Plan != nil {
		var done strings.Builder
		for _, st := range s.Plan.Steps {
			if st.Status == dm.StatusDone {
				fmt.Fprintf(&done, "### %s\n%s\n\n", st.Title, truncate(st.ExecutionRes, 4000))
			}
		}
		if done.Len() > 0 {
			msgs = append(msgs, schema.UserMessage("Findings of the steps already completed:\n\n"+done.String()))
		}
		if s.PlanFeedback != "" {
			prev, err := json.Marshal(s.Plan)
			if err != nil {
				return plannerIn{}, fmt.Errorf("encode plan: %w", err)
			}
			msgs = append(msgs, schema.UserMessage("Your previous plan:\n"+string(prev)+
				"\n\nThe user reviewed it and asks for these changes. Produce a revised plan:\n"+s.PlanFeedback))
		}
	}
	role, jsonMode := RoleBasic, true
	if s.Settings.EnableDeepThinking && g.deps.Models.Has(RoleReasoning) {
		// Reasoning models often reject response_format; their output goes through the same repair.
		role, jsonMode = RoleReasoning, false
	}
	return plannerIn{msgs: msgs, role: role, json: jsonMode, maxSteps: s.Settings.MaxStepNum,
		locale: pickLocale(s.Locale, s.Settings.Locale), topic: s.ResearchTopic}, nil
}

func (g *Graph) plannerAgent(ctx context.Context, in plannerIn) (plannerOut, error) {
	if in.skip {
		return plannerOut{skip: true}, nil
	}
	m := g.deps.Models.Chat(in.role)
	if in.json {
		m = g.deps.Models.JSON(in.role)
	}
	sr, err := m.Stream(ctx, in.msgs)
	if err != nil {
		return plannerOut{}, fmt.Errorf("planner: %w", err)
	}
	msg, err := stream.From(ctx).Message(dm.AgentPlanner, sr)
	if err != nil {
		return plannerOut{}, fmt.Errorf("planner: %w", err)
	}
	plan, perr := ParsePlan(msg.Content, in.maxSteps, in.locale, in.topic)
	return plannerOut{plan: plan, raw: msg.Content, err: perr}, nil
}

func (g *Graph) plannerRoute(ctx context.Context, s *dm.State, o plannerOut) (string, error) {
	if o.skip {
		return dm.AgentReporter, nil
	}
	if o.err != nil {
		g.deps.Logger.WarnContext(ctx, "planner output unusable", "err", o.err, "output", truncate(o.raw, 500))
	}
	next := afterPlanner(s, o.err == nil, o.plan != nil && o.plan.HasEnoughContext)
	if o.err != nil {
		if next == "" {
			return "", fmt.Errorf("%w: the planner did not produce a usable plan (%v)", ErrRunFailed, o.err)
		}
		return next, nil
	}
	archiveFinished(s)
	s.Plan = o.plan
	s.PlanFeedback = ""
	return next, nil
}

// archiveFinished keeps the findings of a plan that a new plan replaces, so the reporter still sees them.
func archiveFinished(s *dm.State) {
	if s.Plan == nil {
		return
	}
	for _, st := range s.Plan.Steps {
		if st.Status == dm.StatusDone {
			s.PriorSteps = append(s.PriorSteps, st)
		}
	}
}

// ErrRunFailed marks errors that end a run with an error event (as opposed to a failed step, which the run
// survives).
var ErrRunFailed = errors.New("research run failed")
