package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/biz/cli"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/internal/testkit"
)

func TestAskInTerminal(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	settings, err := (&model.ChatRequest{Messages: []model.ChatMessage{{Role: "user", Content: []byte(`"q"`)}}}).Validate(model.Defaults{MaxPlanIterations: 1, MaxStepNum: 3, MaxSearchResults: 3})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// An interactive review: first ask for an edit, then accept.
	ask := &cli.Ask{Runs: e.app.Runs, Settings: settings, Question: "How tall is the Eiffel Tower?", In: strings.NewReader("e\nadd costs\ny\n"), Out: &out, Interactive: true}
	if err := ask.Run(context.Background()); err != nil {
		t.Fatalf("ask: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"── planner ──", "# Eiffel Tower vs tallest building", "1. [research]", "Accept the plan?", "What should change?",
		"→ web_search {\"query\":\"Eiffel Tower height\"}", "← [{", "── reporter ──", "## References", "sources collected"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "Accept the plan?") != 2 {
		t.Errorf("want two reviews (edit, then accept):\n%s", got)
	}
}

func TestAskReportsFailure(t *testing.T) {
	s := &script{plan: func(*testkit.ChatRequest) string { return "no plan" }}
	e := newEnv(t, s.respond)
	settings, _ := (&model.ChatRequest{Messages: []model.ChatMessage{{Role: "user", Content: []byte(`"q"`)}}}).Validate(model.Defaults{MaxPlanIterations: 1, MaxStepNum: 3, MaxSearchResults: 3})
	var out bytes.Buffer
	err := (&cli.Ask{Runs: e.app.Runs, Settings: settings, Question: "Eiffel?", Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "plan") {
		t.Fatalf("want a planning error, got %v", err)
	}
}
