package model

import (
	"reflect"
	"testing"
)

func sampleState() *State {
	at := "2025-01-02T03:04:05Z"
	return &State{
		ThreadID:             "t1",
		Settings:             Settings{MaxStepNum: 3, ReportStyle: StyleNews},
		Messages:             []Message{{Role: "user", Content: "q"}, {Role: "assistant", Agent: AgentCoordinator, Content: "a"}},
		ClarificationHistory: []string{"which region?"},
		Plan: &Plan{Title: "plan", Steps: []Step{
			{ID: "s1", Title: "one", Status: StatusDone, DependsOn: []string{"s0"}},
			{ID: "s2", Title: "two", Status: StatusPending, DependsOn: []string{"s1"}},
		}},
		PriorSteps: []Step{{ID: "p1", Status: StatusDone, DependsOn: []string{"p0"}}},
		Citations:  []Citation{{URL: "https://example.com", Title: "Ex", AccessedAt: &at, Agents: []string{AgentResearcher}}},
	}
}

func TestCloneNil(t *testing.T) {
	var s *State
	if s.Clone() != nil {
		t.Error("Clone of nil state is not nil")
	}
}

func TestCloneEqual(t *testing.T) {
	orig := sampleState()
	if c := orig.Clone(); !reflect.DeepEqual(c, orig) {
		t.Errorf("clone differs:\n%+v\n%+v", c, orig)
	}
	empty := &State{ThreadID: "t"}
	if c := empty.Clone(); !reflect.DeepEqual(c, empty) || c == empty {
		t.Errorf("clone of empty state = %+v", c)
	}
}

func TestCloneIsDeep(t *testing.T) {
	mutations := []struct {
		name   string
		mutate func(*State)
	}{
		{"message", func(s *State) { s.Messages[0].Content = "changed" }},
		{"append message", func(s *State) { s.Messages = append(s.Messages[:1], Message{Content: "x"}) }},
		{"clarification history", func(s *State) { s.ClarificationHistory[0] = "changed" }},
		{"plan title", func(s *State) { s.Plan.Title = "changed" }},
		{"plan step status", func(s *State) { s.Plan.Steps[1].Status = StatusDone }},
		{"plan step depends_on", func(s *State) { s.Plan.Steps[0].DependsOn[0] = "changed" }},
		{"prior step", func(s *State) { s.PriorSteps[0].Status = StatusFailed }},
		{"prior step depends_on", func(s *State) { s.PriorSteps[0].DependsOn[0] = "changed" }},
		{"citation title", func(s *State) { s.Citations[0].Title = "changed" }},
		{"citation accessed_at", func(s *State) { *s.Citations[0].AccessedAt = "changed" }},
		{"citation agents", func(s *State) { s.Citations[0].Agents[0] = "changed" }},
		{"settings", func(s *State) { s.Settings.MaxStepNum = 9 }},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			orig := sampleState()
			c := orig.Clone()
			m.mutate(c)
			if !reflect.DeepEqual(orig, sampleState()) {
				t.Errorf("mutating the clone changed the original: %+v", orig)
			}
		})
	}
}

func TestStepFinished(t *testing.T) {
	tests := []struct {
		status string
		want   bool
	}{
		{StatusPending, false},
		{StatusRunning, false},
		{"", false},
		{StatusDone, true},
		{StatusFailed, true},
	}
	for _, tt := range tests {
		s := Step{Status: tt.status}
		if got := s.Finished(); got != tt.want {
			t.Errorf("Step{Status: %q}.Finished() = %v, want %v", tt.status, got, tt.want)
		}
	}
}
