package app_test

import (
	"strings"
	"testing"
)

func TestToolApproval(t *testing.T) {
	for _, answer := range []string{"approved", "rejected"} {
		t.Run(answer, func(t *testing.T) {
			s := &script{}
			e := newEnv(t, s.respond)
			s.site = e.site.URL
			thread := "ap-" + answer
			body := with(baseBody(thread, "Eiffel Tower?"), "auto_accepted_plan", true, "enable_background_investigation", false, "interrupt_before_tools", []string{"web_search"})
			first := e.chat(body)
			checkContract(t, first, thread)
			l := last(first)
			if l.Name != "interrupt" || !strings.Contains(l.Data["content"].(string), "About to execute tool: 'web_search'") ||
				!strings.Contains(l.Data["content"].(string), "Eiffel Tower height") {
				t.Fatalf("no approval interrupt: %s", l.Raw)
			}
			if len(e.search.Queries()) != 0 {
				t.Fatal("the tool ran before approval")
			}
			v := e.waitStatus(thread, "waiting_for_review")
			if v["interrupt"].(map[string]any)["kind"] != "tool_approval" {
				t.Fatalf("thread interrupt: %v", v["interrupt"])
			}
			second := e.chat(with(baseBody(thread, "ok"), "interrupt_feedback", answer))
			checkContractAfter(t, first, second, thread)
			if second[0].Name != "tool_call_result" {
				t.Fatalf("resume did not continue at the tool call: %v", eventNames(second))
			}
			res := second[0].Data["content"].(string)
			switch answer {
			case "approved":
				if len(e.search.Queries()) == 0 || !strings.HasPrefix(res, "[") {
					t.Fatalf("approved call did not run: %q", res)
				}
			case "rejected":
				if len(e.search.Queries()) != 0 || !strings.Contains(res, "rejected") {
					t.Fatalf("rejected call ran or was not reported: %q", res)
				}
			}
			if last(second).Name != "citations" && last(second).Name != "message_chunk" {
				t.Fatalf("run did not finish: %v", eventNames(second))
			}
			if e.waitStatus(thread, "done")["report"] == "" {
				t.Error("no report")
			}
			if n := countAgent(e.llm, "planner"); n != 1 {
				t.Errorf("planner ran %d times", n)
			}
		})
	}
}
