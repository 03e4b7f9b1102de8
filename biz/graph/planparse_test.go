package graph

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

const goodPlan = `{"locale":"en-US","has_enough_context":false,"thought":"t","title":"Towers","steps":[
{"id":"s1","need_search":true,"title":"Heights","description":"find heights","step_type":"research"},
{"id":"s2","need_search":false,"title":"Compare","description":"compare","step_type":"processing","depends_on":["s1"]}]}`

func TestParsePlanRepairs(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		steps int
	}{
		{"clean", goodPlan, 2},
		{"fenced", "```json\n" + goodPlan + "\n```", 2},
		{"prose around", "Here is the plan:\n" + goodPlan + "\nHope it helps!", 2},
		{"trailing commas", strings.ReplaceAll(goodPlan, `"research"}`, `"research",}`), 2},
		{"truncated mid-string", goodPlan[:strings.Index(goodPlan, "compare")+3], 2},
		{"truncated after a key", `{"title":"T","steps":[{"title":"A","description":"d","step_type":"research"},{"title"`, 1},
		{"bare list of steps", `[{"title":"A","description":"d"}]`, 1},
		{"wrapped in content", `{"content": ` + goodPlan + `}`, 2},
		{"wrapped as a string", `{"plan": "{\"title\":\"T\",\"steps\":[{\"title\":\"A\",\"description\":\"d\"}]}"}`, 1},
		{"raw newline in string", "{\"title\":\"T\",\"steps\":[{\"title\":\"A\",\"description\":\"line1\nline2\"}]}", 1},
		{"bool as string", `{"title":"T","has_enough_context":"false","steps":[{"title":"A","description":"d","need_search":"true"}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePlan(tt.in, 5, "en-US", "topic")
			if err != nil {
				t.Fatalf("ParsePlan: %v", err)
			}
			if len(p.Steps) != tt.steps {
				t.Fatalf("steps = %d, want %d (%+v)", len(p.Steps), tt.steps, p.Steps)
			}
			for _, s := range p.Steps {
				if s.ID == "" || s.Status != "pending" || s.StepType == "" {
					t.Errorf("step not normalised: %+v", s)
				}
			}
		})
	}
}

func TestParsePlanDefaultsAndLimits(t *testing.T) {
	in := `{"steps":[{"title":"A","description":"a","need_search":false},{"title":"B","description":"b","need_search":true},
	{"id":"x","title":"C","description":"c","depends_on":["zzz","x","step-1"]},{"title":"D","description":"d"}]}`
	p, err := ParsePlan(in, 3, "zh-CN", "my topic")
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "my topic" || p.Locale != "zh-CN" {
		t.Errorf("defaults not filled: title %q locale %q", p.Title, p.Locale)
	}
	if len(p.Steps) != 3 {
		t.Fatalf("not trimmed to max: %d", len(p.Steps))
	}
	if p.Steps[0].StepType != "analysis" || p.Steps[1].StepType != "research" || p.Steps[2].StepType != "research" {
		t.Errorf("step types not inferred: %q %q %q", p.Steps[0].StepType, p.Steps[1].StepType, p.Steps[2].StepType)
	}
	if got := p.Steps[2].DependsOn; len(got) != 1 || got[0] != "step-1" {
		t.Errorf("depends_on = %v, want [step-1] (unknown and self references dropped)", got)
	}
}

func TestParsePlanRejects(t *testing.T) {
	for _, in := range []string{"", "I cannot help with that.", `{"title":"T","steps":[]}`, `{"title":"T"}`, "{{{"} {
		if _, err := ParsePlan(in, 3, "en-US", ""); !errors.Is(err, ErrNoPlan) {
			t.Errorf("ParsePlan(%q) err = %v, want ErrNoPlan", in, err)
		}
	}
	p, err := ParsePlan(`{"title":"T","has_enough_context":true,"steps":[]}`, 3, "en-US", "")
	if err != nil || !p.HasEnoughContext {
		t.Errorf("a plan with enough context needs no steps: %v %+v", err, p)
	}
}

func FuzzRepairJSON(f *testing.F) {
	for _, s := range []string{goodPlan, "```json\n{\"a\":[1,2,\n```", `{"a":"b`, `[1,2,`, `x {"a":tru`, "{\"a\":\"\\", "{}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := RepairJSON(s)
		if err == nil && !strings.HasPrefix(out, "{") && !strings.HasPrefix(out, "[") {
			t.Fatalf("repaired output does not start a JSON value: %q", out)
		}
		if _, err := ParsePlan(s, 3, "en-US", "t"); err != nil && !errors.Is(err, ErrNoPlan) {
			t.Fatalf("ParsePlan error does not wrap ErrNoPlan: %v", err)
		}
		_ = utf8.ValidString(out)
	})
}
