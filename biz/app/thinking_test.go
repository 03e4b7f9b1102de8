package app_test

import (
	"strings"
	"testing"

	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/internal/testkit"
)

func TestDeepThinkingAndChineseReview(t *testing.T) {
	s := &script{}
	s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
		if agent == "planner" && req.Model == "fake-reasoner" {
			return testkit.Reply{Reasoning: "先比较高度。", Content: "<think>内部推理</think>" + planJSON("埃菲尔铁塔", "research")}, true
		}
		return testkit.Reply{}, false
	}
	e := newEnv(t, s.respond, func(c *conf.Config) {
		c.LLM.Reasoning = conf.ModelEndpoint{BaseURL: c.LLM.Basic.BaseURL, Model: "fake-reasoner"}
	})
	evs := e.chat(with(baseBody("zh", "埃菲尔铁塔有多高？"), "locale", "zh-CN", "enable_deep_thinking", true))
	checkContract(t, evs, "zh")
	var reasoning, content string
	for _, ev := range evs {
		if ev.Data["agent"] == "planner" {
			r, _ := ev.Data["reasoning_content"].(string)
			c, _ := ev.Data["content"].(string)
			reasoning += r
			content += c
		}
	}
	if !strings.Contains(reasoning, "先比较高度") || !strings.Contains(reasoning, "内部推理") || strings.Contains(content, "<think>") {
		t.Errorf("reasoning %q content %q", reasoning, content)
	}
	l := last(evs)
	if l.Name != "interrupt" || l.Data["content"] != "请审阅研究计划。" {
		t.Fatalf("interrupt not localized: %s", l.Raw)
	}
	// The reasoning model is not asked for JSON mode (many reject it); the planner still gets a usable plan.
	for _, r := range e.llm.Requests() {
		if r.Model == "fake-reasoner" && r.JSONMode() {
			t.Error("reasoning model called in JSON mode")
		}
	}
	if snap := e.state("zh"); snap.Plan == nil || snap.Plan.Title != "埃菲尔铁塔" {
		t.Fatalf("plan = %+v", snap.Plan)
	}
}
