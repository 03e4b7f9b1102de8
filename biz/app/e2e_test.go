package app_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/internal/testkit"
)

func baseBody(thread, text string) map[string]any {
	return map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": text}},
		"thread_id": thread, "locale": "en-US", "auto_accepted_plan": false,
		"enable_background_investigation": true, "max_plan_iterations": 1, "max_step_num": 3,
		"max_search_results": 3, "report_style": "academic",
	}
}

func with(b map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func eventNames(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return out
}

func last(evs []sseEvent) sseEvent { return evs[len(evs)-1] }

func TestFullResearchRun(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	start := time.Now()
	evs := e.chat(with(baseBody("full", "How tall is the Eiffel Tower compared with the tallest building?"), "auto_accepted_plan", true))
	t.Logf("full run: %d events, %d LLM calls, %s", len(evs), e.llm.Count(), time.Since(start))
	checkContract(t, evs, "full")
	golden(t, "full_run", summarize(evs, e))
	if l := last(evs); l.Name != "citations" {
		t.Fatalf("last event %s, want citations", l.Name)
	}
	// The reporter saw only sources that tools returned, and the References list them.
	var report string
	for _, ev := range evs {
		if ev.Data["agent"] == "reporter" {
			if c, ok := ev.Data["content"].(string); ok {
				report += c
			}
		}
	}
	if !strings.Contains(report, "## References") || !strings.Contains(report, e.site.URL+"/article") {
		t.Errorf("report lacks a References section with the crawled page:\n%s", report)
	}
	// The background search ran before planning and its results reached the planner.
	var planner *testkit.ChatRequest
	for _, r := range e.llm.Requests() {
		if agentOf(r) == "planner" {
			planner = r
		}
	}
	if planner == nil || !strings.Contains(string(planner.Raw), "Background investigation results") || !planner.JSONMode() {
		t.Errorf("planner request lacks background results or JSON mode")
	}
	snap := e.state("full")
	if snap == nil || snap.Plan == nil || snap.Plan.Steps[0].Status != "done" || snap.Plan.Steps[1].Status != "done" || snap.FinalReport == "" {
		t.Fatalf("thread state not complete: %+v", snap)
	}
}

func TestGreeting(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	evs := e.chat(baseBody("hi", "hello there"))
	checkContract(t, evs, "hi")
	golden(t, "greeting", summarize(evs, e))
	if e.llm.Count() != 1 {
		t.Errorf("a greeting took %d model calls, want 1", e.llm.Count())
	}
}

func TestPlanReviewAccept(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	first := e.chat(baseBody("rev", "Eiffel Tower height?"))
	checkContract(t, first, "rev")
	if l := last(first); l.Name != "interrupt" {
		t.Fatalf("first response ends with %s, want interrupt", l.Name)
	}
	// The planner message is the one right before the interrupt, and it is finished.
	if prev := first[len(first)-2]; prev.Data["agent"] != "planner" || prev.Data["finish_reason"] != "stop" {
		t.Fatalf("event before the interrupt: %s", prev.Raw)
	}
	second := e.chat(with(baseBody("rev", "Great! Let's get started."), "interrupt_feedback", "accepted"))
	checkContract(t, second, "rev")
	golden(t, "review_accept", summarize(first, e)+"--- resume ---\n"+summarize(second, e))
	if second[0].Data["agent"] != "researcher" {
		t.Errorf("resume starts with %v, want researcher", second[0].Data["agent"])
	}
	if l := last(second); l.Name != "citations" {
		t.Errorf("resumed run ends with %s", l.Name)
	}
}

func TestPlanReviewEditThenAccept(t *testing.T) {
	s := &script{}
	s.plan = func(req *testkit.ChatRequest) string {
		if strings.Contains(string(req.Raw), "also cover wind load") {
			return planJSON("Eiffel Tower with wind load", "research", "analysis")
		}
		return planJSON("Eiffel Tower", "research")
	}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	first := e.chat(baseBody("edit", "Eiffel Tower height?"))
	second := e.chat(with(baseBody("edit", "also cover wind load"), "interrupt_feedback", "edit_plan"))
	checkContract(t, second, "edit")
	if l := last(second); l.Name != "interrupt" || second[0].Data["agent"] != "planner" {
		t.Fatalf("edit should re-plan and pause again: %v", eventNames(second))
	}
	if first[len(first)-1].Data["id"] == second[len(second)-1].Data["id"] {
		t.Error("the second interrupt reuses the first interrupt's id")
	}
	// The content form of acceptance works too.
	third := e.chat(baseBody("edit", "[ACCEPTED] go"))
	checkContract(t, third, "edit")
	golden(t, "review_edit_accept", summarize(first, e)+"--- edit ---\n"+summarize(second, e)+"--- accept ---\n"+summarize(third, e))
	snap := e.state("edit")
	if snap.Plan.Title != "Eiffel Tower with wind load" || len(snap.Plan.Steps) != 2 || snap.Plan.Steps[1].Status != "done" {
		t.Fatalf("edited plan not executed: %+v", snap.Plan)
	}
}

func TestClarification(t *testing.T) {
	s := &script{clarifyOnce: true}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	body := func(text string) map[string]any {
		return with(baseBody("clar", text), "enable_clarification", true, "max_clarification_rounds", 1, "auto_accepted_plan", true,
			"enable_background_investigation", false)
	}
	first := e.chat(body("research AI"))
	checkContract(t, first, "clar")
	if len(first) == 0 || first[0].Data["agent"] != "coordinator" || last(first).Data["finish_reason"] != "stop" {
		t.Fatalf("clarification question not streamed: %v", eventNames(first))
	}
	second := e.chat(body("in healthcare"))
	checkContract(t, second, "clar")
	golden(t, "clarification", summarize(first, e)+"--- answer ---\n"+summarize(second, e))
	snap := e.state("clar")
	if snap.ClarificationRounds != 1 || snap.FinalReport == "" {
		t.Fatalf("rounds=%d report=%q", snap.ClarificationRounds, snap.FinalReport)
	}
	// The coordinator saw the conversation, including its own question.
	var coord *testkit.ChatRequest
	for _, r := range e.llm.Requests() {
		if agentOf(r) == "coordinator" {
			coord = r
		}
	}
	if !strings.Contains(string(coord.Raw), "Which aspect of AI") || !strings.Contains(string(coord.Raw), "research AI") {
		t.Error("the second coordinator call lacks the conversation memory")
	}
}

func TestPlannerJSONRepair(t *testing.T) {
	s := &script{plan: func(*testkit.ChatRequest) string {
		p := planJSON("Repaired plan", "research")
		// Fenced, prose around, a trailing comma and a truncated tail.
		p = strings.Replace(p, `"research"`, `"research",`, 1)
		return "Sure! Here is the plan:\n```json\n" + p[:len(p)-8] + "\n```"
	}}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	evs := e.chat(with(baseBody("repair", "Eiffel Tower?"), "auto_accepted_plan", true))
	checkContract(t, evs, "repair")
	golden(t, "planner_repair", summarize(evs, e))
	if snap := e.state("repair"); snap.Plan == nil || snap.Plan.Title != "Repaired plan" || snap.FinalReport == "" {
		t.Fatalf("repaired plan not used: %+v", snap)
	}
}

func TestPlannerUnusable(t *testing.T) {
	s := &script{plan: func(*testkit.ChatRequest) string { return "I am not able to make a plan." }}
	e := newEnv(t, s.respond)
	evs := e.chat(baseBody("noplan", "Eiffel Tower?"))
	checkContract(t, evs, "noplan")
	if l := last(evs); l.Name != "error" || !strings.Contains(l.Data["error"].(string), "plan") {
		t.Fatalf("want an error about the plan, got %s", l.Raw)
	}
}

func TestLLMRetryAfter500(t *testing.T) {
	s := &script{}
	e := newEnv(t, testkit.FailFirst(2, 500, s.respond))
	s.site = e.site.URL
	evs := e.chat(with(baseBody("retry", "Eiffel Tower?"), "auto_accepted_plan", true))
	checkContract(t, evs, "retry")
	golden(t, "llm_retry", summarize(evs, e))
	if l := last(evs); l.Name != "citations" {
		t.Fatalf("run did not recover from 500s: %v", eventNames(evs))
	}
}

func TestUnreachableLLM(t *testing.T) {
	s := &script{}
	ln := closedPort(t)
	e := newEnv(t, s.respond, func(c *conf.Config) {
		c.LLM.Basic.BaseURL = "http://" + ln + "/v1"
		c.LLM.MaxRetries = 1
	})
	evs := e.chat(baseBody("down", "Eiffel Tower?"))
	checkContract(t, evs, "down")
	if len(evs) != 1 || evs[0].Name != "error" {
		t.Fatalf("want exactly one error event, got %v", eventNames(evs))
	}
	msg := evs[0].Data["error"].(string)
	if !strings.Contains(msg, "http://"+ln+"/v1") || !strings.Contains(msg, "LLM_BASE_URL") || strings.Contains(msg, "sk-test-secret") {
		t.Fatalf("error does not name the URL and variable (or leaks the key): %q", msg)
	}
}

func TestFailingToolAndStep(t *testing.T) {
	s := &script{}
	s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
		// The researcher's search fails; the model then fails too: the step fails, the report is still written.
		if agent == "researcher" && len(req.ToolResults()) > 0 {
			return testkit.Reply{Status: 400, ErrorMessage: "context length exceeded"}, true
		}
		return testkit.Reply{}, false
	}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	e.search.FailNext(100, 503)
	evs := e.chat(with(baseBody("fail", "Eiffel Tower?"), "auto_accepted_plan", true, "enable_background_investigation", false))
	checkContract(t, evs, "fail")
	golden(t, "failing_tool", summarize(evs, e))
	var toolErr bool
	for _, ev := range evs {
		if ev.Name == "tool_call_result" && strings.HasPrefix(ev.Data["content"].(string), "Error") {
			toolErr = true
		}
	}
	if !toolErr {
		t.Error("the failed search was not reported as a tool result")
	}
	snap := e.state("fail")
	if snap.Plan.Steps[0].Status != "failed" || snap.Plan.Steps[0].Error == "" || snap.FinalReport == "" {
		t.Fatalf("step status %q error %q report %q", snap.Plan.Steps[0].Status, snap.Plan.Steps[0].Error, snap.FinalReport)
	}
	var rep *testkit.ChatRequest
	for _, r := range e.llm.Requests() {
		if agentOf(r) == "reporter" {
			rep = r
		}
	}
	if !strings.Contains(string(rep.Raw), "failed") {
		t.Error("the reporter was not told which step failed")
	}
}

func TestCancelledStreamsLeaveNoGoroutines(t *testing.T) {
	s := &script{}
	slow := func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		r.ChunkDelay = 200 * time.Millisecond
		return r
	}
	e := newEnv(t, slow, func(c *conf.Config) { c.Runs.CancelOnDisconnect = true })
	s.site = e.site.URL
	// Warm up connections and lazily started goroutines.
	e.chat(baseBody("warm", "hello"))
	time.Sleep(100 * time.Millisecond)
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := with(baseBody("c"+string(rune('A'+i%26))+string(rune('a'+i/26)), "Eiffel Tower?"), "auto_accepted_plan", true)
			req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/api/chat/stream", strings.NewReader(mustJSON(b)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if _, err := scanEvents(resp.Body, 1); err != nil {
				t.Error(err)
			}
			cancel()
		}(i)
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	var n int
	for time.Now().Before(deadline) {
		n = runtime.NumGoroutine()
		if n <= base+5 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n > base+5 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d after cancelling, baseline %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	// The runs really stopped: no more model calls arrive.
	c1 := e.llm.Count()
	time.Sleep(500 * time.Millisecond)
	if c2 := e.llm.Count(); c2 != c1 {
		t.Errorf("model calls continued after cancellation: %d → %d", c1, c2)
	}
}

func TestBusyThread(t *testing.T) {
	s := &script{}
	e := newEnv(t, func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		r.Delay = 300 * time.Millisecond
		return r
	})
	s.site = e.site.URL
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/api/chat/stream", strings.NewReader(mustJSON(baseBody("busy", "Eiffel?"))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	r2 := e.post("/api/chat/stream", baseBody("busy", "again"))
	b, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != 409 || !strings.Contains(string(b), "in progress") {
		t.Fatalf("second run on a busy thread: %d %s", r2.StatusCode, b)
	}
}
