package app_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deer-go/deer-go/internal/testkit"
)

// agentOf tells which agent is calling from the first line of its system prompt.
func agentOf(req *testkit.ChatRequest) string {
	first, _, _ := strings.Cut(req.System(), "\n")
	for _, a := range []string{"coordinator", "planner", "researcher", "analyst", "coder", "reporter"} {
		if strings.Contains(first, a) {
			return a
		}
	}
	return "unknown"
}

// script is a scripted research model: it behaves like a well-behaved LLM for each agent.
type script struct {
	site        string
	plan        func(req *testkit.ChatRequest) string // planner output; default planJSON
	override    func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool)
	clarifyOnce bool
}

func planJSON(title string, steps ...string) string {
	type step struct {
		ID          string   `json:"id"`
		NeedSearch  bool     `json:"need_search"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		StepType    string   `json:"step_type"`
		DependsOn   []string `json:"depends_on,omitempty"`
	}
	p := struct {
		Locale           string `json:"locale"`
		HasEnoughContext bool   `json:"has_enough_context"`
		Thought          string `json:"thought"`
		Title            string `json:"title"`
		Steps            []step `json:"steps"`
	}{Locale: "en-US", Thought: "Compare heights from reliable sources.", Title: title}
	for i, typ := range steps {
		s := step{ID: fmt.Sprintf("step-%d", i+1), StepType: typ, NeedSearch: typ == "research",
			Title: fmt.Sprintf("Step %d (%s)", i+1, typ), Description: "Find the facts for part " + fmt.Sprint(i+1)}
		if i > 0 {
			s.DependsOn = []string{"step-1"}
		}
		p.Steps = append(p.Steps, s)
	}
	b, _ := json.MarshalIndent(p, "", "  ")
	return string(b)
}

func call(name string, args any) testkit.ReplyToolCall {
	b, _ := json.Marshal(args)
	return testkit.ReplyToolCall{Name: name, Args: string(b)}
}

func (s *script) respond(req *testkit.ChatRequest) testkit.Reply {
	agent := agentOf(req)
	if s.override != nil {
		if r, ok := s.override(agent, req); ok {
			return r
		}
	}
	switch agent {
	case "coordinator":
		last := strings.ToLower(req.LastUser())
		if strings.Contains(last, "hello") {
			return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("direct_response", map[string]string{"message": "Hello! What would you like to research?", "locale": "en-US"})}}
		}
		if s.clarifyOnce && !strings.Contains(allSystem(req), "limit is reached") {
			return testkit.Reply{Content: "Which aspect of AI interests you: healthcare, finance or education?"}
		}
		topic, locale := req.LastUser(), "en-US"
		for _, r := range topic {
			if r >= 0x4e00 && r <= 0x9fff {
				locale = "zh-CN" // a model detects the user's language
			}
		}
		return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("handoff_to_planner", map[string]string{"research_topic": topic, "locale": locale})}}
	case "planner":
		if s.plan != nil {
			return testkit.Reply{Content: s.plan(req)}
		}
		return testkit.Reply{Content: planJSON("Eiffel Tower vs tallest building", "research", "processing")}
	case "researcher":
		results := req.ToolResults()
		switch len(results) {
		case 0:
			return testkit.Reply{Content: "Let me search.", ToolCalls: []testkit.ReplyToolCall{call("web_search", map[string]string{"query": "Eiffel Tower height"})}}
		case 1:
			return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("crawl_tool", map[string]string{"url": s.site + "/article"})}}
		}
		return testkit.Reply{Content: "## Findings\nThe Eiffel Tower is 330 m tall.\n\n### References\n- [Article](" + s.site + "/article)"}
	case "coder":
		if len(req.ToolResults()) == 0 {
			return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("python_repl_tool", map[string]string{"code": "print(828 / 330)"})}}
		}
		return testkit.Reply{Content: "The tallest building is about 2.51 times the tower's height."}
	case "analyst":
		return testkit.Reply{Content: "Cross-checked: the figures agree."}
	case "reporter":
		return testkit.Reply{Content: "# Eiffel Tower vs the tallest building\n\n## Key points\n- The tower is 330 m ([Article](" + s.site + "/article)).\n- Ratio 2.51."}
	}
	return testkit.Reply{Content: "unexpected agent " + agent}
}

func allSystem(req *testkit.ChatRequest) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == "system" {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}
