package graph

import (
	"strings"

	dm "github.com/deer-go/deer-go/biz/model"
)

// The routing rules of the research graph, in one place. Every function here is pure: State and an agent's
// outcome in, the next node out. An empty result ends the run.

// coordinatorOutcome is what the coordinator's model decided.
type coordinatorOutcome struct {
	Kind   string // handoff | direct | question | none
	Topic  string
	Locale string
	Reply  string
}

// afterCoordinator: a hand-off goes to research (background investigation first when enabled); a direct reply
// ends the run; a clarifying question ends the run while rounds remain, and is treated as a hand-off after the
// limit; no decision at all falls through to planning.
func afterCoordinator(s *dm.State, o coordinatorOutcome) string {
	switch o.Kind {
	case "direct":
		return ""
	case "question":
		if s.Settings.EnableClarification && s.ClarificationRounds < s.Settings.MaxClarificationRounds {
			return ""
		}
		if !s.Settings.EnableClarification {
			return "" // plain text without clarification is a direct reply
		}
	}
	if s.Settings.EnableBackgroundInvestigation {
		return dm.AgentBackground
	}
	return dm.AgentPlanner
}

// afterBackground: the investigation only feeds the planner.
func afterBackground(*dm.State) string { return dm.AgentPlanner }

// plannerDone reports whether the planner must hand over to the reporter without planning again: the allowed
// plan iterations are used up.
func plannerDone(s *dm.State) bool {
	return s.PlanIterations >= s.Settings.MaxPlanIterations
}

// afterPlanner: a plan with enough context goes straight to the report; a new plan goes to review; an unusable
// plan ends in a report when an earlier plan exists and in an error otherwise.
func afterPlanner(s *dm.State, planned bool, enough bool) string {
	switch {
	case !planned && s.Plan != nil:
		return dm.AgentReporter
	case !planned:
		return ""
	case enough:
		return dm.AgentReporter
	default:
		return dm.AgentHumanFeedback
	}
}

// Review decisions.
const (
	reviewAccept = "accept"
	reviewEdit   = "edit"
	reviewOther  = "other"
)

// parseReview reads a resume answer: "[accepted] …" / "[edit_plan] …" (deer-flow's forms, case-insensitive),
// also "accepted" / "edit_plan" alone. It returns the decision and the user's text.
func parseReview(answer string) (decision, text string) {
	a := strings.TrimSpace(answer)
	up := strings.ToUpper(a)
	for _, p := range []struct{ prefix, decision string }{
		{"[ACCEPTED]", reviewAccept}, {"[EDIT_PLAN]", reviewEdit}, {"ACCEPTED", reviewAccept}, {"EDIT_PLAN", reviewEdit},
	} {
		if strings.HasPrefix(up, p.prefix) {
			return p.decision, strings.TrimSpace(a[len(p.prefix):])
		}
	}
	return reviewOther, a
}

// afterReview: accepted → research; an edit or anything else → back to the planner.
func afterReview(decision string) string {
	if decision == reviewAccept {
		return dm.AgentResearchTeam
	}
	return dm.AgentPlanner
}

// agentForStep maps a step type to the agent that runs it.
func agentForStep(t string) string {
	switch t {
	case dm.StepProcessing:
		return dm.AgentCoder
	case dm.StepAnalysis:
		return dm.AgentAnalyst
	default:
		return dm.AgentResearcher
	}
}

// readySteps lists the indexes of steps that can run now: not finished, not running, all dependencies finished.
// Plan order is kept. research_team dispatches the first of them; the list form lets a scheduler run all at once.
func readySteps(p *dm.Plan) []int {
	if p == nil {
		return nil
	}
	finished := map[string]bool{}
	for _, st := range p.Steps {
		if st.Finished() {
			finished[st.ID] = true
		}
	}
	var ready []int
	for i, st := range p.Steps {
		if st.Finished() || st.Status == dm.StatusRunning {
			continue
		}
		ok := true
		for _, d := range st.DependsOn {
			ok = ok && finished[d]
		}
		if ok {
			ready = append(ready, i)
		}
	}
	return ready
}

// afterResearchTeam: the first ready step's agent; with every step finished (or none runnable), back to the
// planner, which hands over to the reporter once its iterations are used up.
func afterResearchTeam(s *dm.State) (next string, step int) {
	ready := readySteps(s.Plan)
	if len(ready) == 0 {
		return dm.AgentPlanner, -1
	}
	i := ready[0]
	return agentForStep(s.Plan.Steps[i].StepType), i
}

// afterStep: every step returns to the research team.
func afterStep(*dm.State) string { return dm.AgentResearchTeam }
