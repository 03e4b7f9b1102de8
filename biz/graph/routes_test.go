package graph

import (
	"testing"

	dm "github.com/deer-go/deer-go/biz/model"
)

func TestAfterCoordinator(t *testing.T) {
	st := func(bg, clar bool, rounds, max int) *dm.State {
		return &dm.State{ClarificationRounds: rounds, Settings: dm.Settings{EnableBackgroundInvestigation: bg, EnableClarification: clar, MaxClarificationRounds: max}}
	}
	tests := []struct {
		name string
		s    *dm.State
		kind string
		want string
	}{
		{"handoff with background", st(true, false, 0, 3), "handoff", dm.AgentBackground},
		{"handoff without background", st(false, false, 0, 3), "handoff", dm.AgentPlanner},
		{"direct reply ends", st(true, false, 0, 3), "direct", ""},
		{"text without clarification is a reply", st(false, false, 0, 3), "question", ""},
		{"question within rounds ends", st(false, true, 1, 3), "question", ""},
		{"question after the limit hands off", st(false, true, 3, 3), "question", dm.AgentPlanner},
		{"question after the limit with background", st(true, true, 2, 2), "question", dm.AgentBackground},
		{"zero rounds allowed hands off", st(false, true, 0, 0), "question", dm.AgentPlanner},
		{"no decision plans", st(false, false, 0, 3), "none", dm.AgentPlanner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := afterCoordinator(tt.s, coordinatorOutcome{Kind: tt.kind}); got != tt.want {
				t.Errorf("afterCoordinator = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPlannerRules(t *testing.T) {
	if !plannerDone(&dm.State{PlanIterations: 1, Settings: dm.Settings{MaxPlanIterations: 1}}) {
		t.Error("iterations used up must hand over to the reporter")
	}
	if plannerDone(&dm.State{PlanIterations: 0, Settings: dm.Settings{MaxPlanIterations: 1}}) {
		t.Error("first planning turn must plan")
	}
	prev := &dm.State{Plan: &dm.Plan{}}
	tests := []struct {
		name            string
		s               *dm.State
		planned, enough bool
		want            string
	}{
		{"new plan goes to review", &dm.State{}, true, false, dm.AgentHumanFeedback},
		{"enough context goes to the report", &dm.State{}, true, true, dm.AgentReporter},
		{"unusable with a previous plan reports", prev, false, false, dm.AgentReporter},
		{"unusable without a plan fails", &dm.State{}, false, false, ""},
	}
	for _, tt := range tests {
		if got := afterPlanner(tt.s, tt.planned, tt.enough); got != tt.want {
			t.Errorf("%s: afterPlanner = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseReview(t *testing.T) {
	tests := []struct {
		in, decision, text string
	}{
		{"[accepted] Great! Let's start.", reviewAccept, "Great! Let's start."},
		{"[ACCEPTED]", reviewAccept, ""},
		{"[edit_plan] add a step on costs", reviewEdit, "add a step on costs"},
		{"[Edit_Plan]  more on wind", reviewEdit, "more on wind"},
		{"accepted", reviewAccept, ""},
		{"whatever", reviewOther, "whatever"},
		{"", reviewOther, ""},
	}
	for _, tt := range tests {
		d, text := parseReview(tt.in)
		if d != tt.decision || text != tt.text {
			t.Errorf("parseReview(%q) = %q, %q; want %q, %q", tt.in, d, text, tt.decision, tt.text)
		}
		want := dm.AgentPlanner
		if tt.decision == reviewAccept {
			want = dm.AgentResearchTeam
		}
		if got := afterReview(d); got != want {
			t.Errorf("afterReview(%q) = %q, want %q", d, got, want)
		}
	}
}

func TestAfterResearchTeam(t *testing.T) {
	step := func(id, typ, status string, deps ...string) dm.Step {
		return dm.Step{ID: id, StepType: typ, Status: status, DependsOn: deps}
	}
	tests := []struct {
		name  string
		steps []dm.Step
		want  string
		index int
	}{
		{"first pending research", []dm.Step{step("a", "research", "pending"), step("b", "processing", "pending")}, dm.AgentResearcher, 0},
		{"done steps are skipped, pending ones are not", []dm.Step{step("a", "research", "done"), step("b", "processing", "pending")}, dm.AgentCoder, 1},
		{"failed steps count as finished", []dm.Step{step("a", "research", "failed"), step("b", "analysis", "pending")}, dm.AgentAnalyst, 1},
		{"waits for dependencies", []dm.Step{step("a", "research", "pending", "b"), step("b", "analysis", "pending")}, dm.AgentAnalyst, 1},
		{"dependency satisfied", []dm.Step{step("a", "research", "done"), step("b", "processing", "pending", "a")}, dm.AgentCoder, 1},
		{"all done goes back to the planner", []dm.Step{step("a", "research", "done"), step("b", "analysis", "failed")}, dm.AgentPlanner, -1},
		{"nothing runnable goes back to the planner", []dm.Step{step("a", "research", "pending", "b"), step("b", "research", "pending", "a")}, dm.AgentPlanner, -1},
		{"unknown type is research", []dm.Step{step("a", "", "pending")}, dm.AgentResearcher, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &dm.State{Plan: &dm.Plan{Steps: tt.steps}}
			got, i := afterResearchTeam(s)
			if got != tt.want || i != tt.index {
				t.Errorf("afterResearchTeam = %q, %d; want %q, %d", got, i, tt.want, tt.index)
			}
		})
	}
	if got, _ := afterResearchTeam(&dm.State{}); got != dm.AgentPlanner {
		t.Errorf("no plan: %q, want planner", got)
	}
}

func TestReadyStepsListsAllParallelSteps(t *testing.T) {
	p := &dm.Plan{Steps: []dm.Step{
		{ID: "a", Status: "pending"}, {ID: "b", Status: "running"}, {ID: "c", Status: "pending"}, {ID: "d", Status: "pending", DependsOn: []string{"a"}},
	}}
	got := readySteps(p)
	if len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Fatalf("readySteps = %v, want [0 2]", got)
	}
}

func TestPickLocale(t *testing.T) {
	tests := []struct{ detected, requested, want string }{
		{"zh-CN", "en-US", "zh-CN"},
		{"", "zh-CN", "zh-CN"},
		{"zh", "", "zh-CN"},
		{"en_us", "", "en-US"},
		{"", "", "en-US"},
		{"??", "", "en-US"},
	}
	for _, tt := range tests {
		if got := pickLocale(tt.detected, tt.requested); got != tt.want {
			t.Errorf("pickLocale(%q, %q) = %q, want %q", tt.detected, tt.requested, got, tt.want)
		}
	}
}
