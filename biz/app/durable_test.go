package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deer-go/deer-go/internal/testkit"
)

// slowScript streams every reply slowly so that tests can act in the middle of a run.
func slowScript(s *script, delay time.Duration) testkit.Responder {
	return func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		r.ChunkDelay = delay
		return r
	}
}

// readN reads SSE events from a live response until n events arrived (or the body ended).
func readN(t *testing.T, body io.Reader, n int) []sseEvent {
	t.Helper()
	br := bufio.NewReader(body)
	var out []sseEvent
	var block strings.Builder
	for len(out) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if line == "\n" {
			evs := readSSE(t, strings.NewReader(block.String()+"\n\n"))
			out = append(out, evs...)
			block.Reset()
			continue
		}
		block.WriteString(line)
	}
	return out
}

func (e *env) get(path string, hdr ...string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.base+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func (e *env) waitStatus(id, want string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := e.get("/api/threads/" + id)
		var v map[string]any
		err := json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err == nil && v["status"] == want {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("thread %s status %v, want %s", id, v["status"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ids(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID+":"+ev.Name)
	}
	return out
}

func TestReconnectResumesTheStreamExactly(t *testing.T) {
	s := &script{}
	e := newEnv(t, slowScript(s, 15*time.Millisecond))
	s.site = e.site.URL
	for _, k := range []int{1, 7, 30} {
		t.Run(fmt.Sprint("drop after ", k), func(t *testing.T) {
			thread := fmt.Sprintf("re-%d", k)
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/api/chat/stream", strings.NewReader(mustJSON(with(baseBody(thread, "Eiffel Tower?"), "auto_accepted_plan", true))))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			first := readN(t, resp.Body, k)
			cancel()
			resp.Body.Close()
			if len(first) != k {
				t.Fatalf("read %d events, want %d", len(first), k)
			}
			lastID := first[len(first)-1].ID
			// Reconnect with Last-Event-ID: exactly the missed events, then the live ones, until the run ends.
			r2 := e.get("/api/threads/"+thread+"/stream", "Last-Event-ID", lastID)
			rest := readSSE(t, r2.Body)
			r2.Body.Close()
			all := append(append([]sseEvent(nil), first...), rest...)
			// The uninterrupted stream, replayed from the store after the run.
			r3 := e.get("/api/threads/" + thread + "/stream?after=0")
			whole := readSSE(t, r3.Body)
			r3.Body.Close()
			if got, want := ids(all), ids(whole); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("reconnected stream differs:\n got %v\nwant %v", got, want)
			}
			for i := range all {
				if all[i].Raw != whole[i].Raw {
					t.Fatalf("event %d differs:\n%s\n%s", i, all[i].Raw, whole[i].Raw)
				}
			}
			for i, ev := range whole {
				if ev.ID != strconv.Itoa(i+1) {
					t.Fatalf("event %d has id %q", i, ev.ID)
				}
			}
			if last(whole).Name != "citations" {
				t.Fatalf("run did not finish: %v", last(whole).Name)
			}
			checkContract(t, whole, thread)
		})
	}
}

func TestRunOutlivesItsClientAndIDsContinueAcrossRuns(t *testing.T) {
	s := &script{}
	e := newEnv(t, slowScript(s, 5*time.Millisecond))
	s.site = e.site.URL
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/api/chat/stream", strings.NewReader(mustJSON(baseBody("detached", "Eiffel Tower?"))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readN(t, resp.Body, 2)
	cancel()
	resp.Body.Close()
	v := e.waitStatus("detached", "waiting_for_review")
	if v["interrupt"] == nil || v["plan"] == nil {
		t.Fatalf("paused thread lacks interrupt or plan: %v", v)
	}
	firstRun := int(v["last_event_id"].(float64))
	second := e.chat(with(baseBody("detached", "go"), "interrupt_feedback", "accepted"))
	if second[0].ID != strconv.Itoa(firstRun+1) {
		t.Fatalf("the second run's first id is %s, want %d", second[0].ID, firstRun+1)
	}
	e.waitStatus("detached", "done")
	// A follow-up question on the finished thread sees the conversation and the report.
	e.chat(baseBody("detached", "hello again"))
	var coord *testkit.ChatRequest
	for _, r := range e.llm.Requests() {
		if agentOf(r) == "coordinator" {
			coord = r
		}
	}
	if !strings.Contains(string(coord.Raw), "Eiffel Tower vs the tallest building") {
		t.Error("the follow-up did not see the earlier report")
	}
}

func TestAttachBusyAndCancel(t *testing.T) {
	s := &script{}
	e := newEnv(t, slowScript(s, 30*time.Millisecond))
	s.site = e.site.URL
	resp := e.post("/api/chat/stream", with(baseBody("c1", "Eiffel Tower?"), "auto_accepted_plan", true))
	defer resp.Body.Close()
	readN(t, resp.Body, 3)
	// A second question while it runs: 409; no new input: attach.
	busy := e.post("/api/chat/stream", baseBody("c1", "another question"))
	b, _ := io.ReadAll(busy.Body)
	busy.Body.Close()
	if busy.StatusCode != 409 || !json.Valid(b) {
		t.Fatalf("busy thread: %d %s", busy.StatusCode, b)
	}
	att := e.post("/api/chat/stream", map[string]any{"thread_id": "c1"})
	if att.StatusCode != 200 {
		t.Fatalf("attach: %d", att.StatusCode)
	}
	attached := readN(t, att.Body, 2)
	if len(attached) != 2 || attached[0].ID != "1" {
		t.Fatalf("attach did not replay the run from its start: %v", ids(attached))
	}
	// Wait until the plan is saved, so the test can check that cancelling keeps it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.get("/api/threads/c1")
		var v map[string]any
		json.NewDecoder(r.Body).Decode(&v)
		r.Body.Close()
		if v["plan"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no plan saved while running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Cancel: both streams end with error reason cancelled; the state is saved.
	cresp, err := http.Post(e.base+"/api/threads/c1/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Body.Close()
	if cresp.StatusCode != 200 {
		t.Fatalf("cancel: %d", cresp.StatusCode)
	}
	rest := readSSE(t, resp.Body)
	if l := last(rest); l.Name != "error" || l.Data["reason"] != "cancelled" {
		t.Fatalf("stream after cancel ends with %s", l.Raw)
	}
	attRest := readSSE(t, att.Body)
	att.Body.Close()
	if l := last(attRest); l.Name != "error" || l.Data["reason"] != "cancelled" {
		t.Fatalf("attached stream after cancel ends with %s", l.Raw)
	}
	v := e.waitStatus("c1", "cancelled")
	if v["plan"] == nil {
		t.Error("cancelled thread lost its plan")
	}
	again, _ := http.Post(e.base+"/api/threads/c1/cancel", "application/json", nil)
	again.Body.Close()
	if again.StatusCode != 409 {
		t.Errorf("cancelling an idle thread: %d, want 409", again.StatusCode)
	}
}

func TestThreadHistoryEndpoints(t *testing.T) {
	s := &script{}
	e := newEnv(t, s.respond)
	s.site = e.site.URL
	for i := 0; i < 3; i++ {
		e.chat(with(baseBody(fmt.Sprintf("h%d", i), fmt.Sprintf("Question %d about towers", i)), "auto_accepted_plan", true))
	}
	resp := e.get("/api/threads?limit=2")
	var page struct {
		Threads []struct{ ID, Title, Status string } `json:"threads"`
		Next    string                               `json:"next_cursor"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(page.Threads) != 2 || page.Threads[0].ID != "h2" || page.Next == "" || page.Threads[0].Status != "done" {
		t.Fatalf("first page: %+v", page)
	}
	resp = e.get("/api/threads?limit=2&cursor=" + page.Next)
	var page2 struct {
		Threads []struct{ ID string } `json:"threads"`
		Next    string                `json:"next_cursor"`
	}
	json.NewDecoder(resp.Body).Decode(&page2)
	resp.Body.Close()
	if len(page2.Threads) != 1 || page2.Threads[0].ID != "h0" || page2.Next != "" {
		t.Fatalf("second page: %+v", page2)
	}
	v := e.waitStatus("h1", "done")
	plan := v["plan"].(map[string]any)
	for _, st := range plan["steps"].([]any) {
		if st.(map[string]any)["status"] != "done" {
			t.Errorf("step status %v", st)
		}
	}
	if !strings.Contains(v["report"].(string), "## References") || len(v["citations"].([]any)) == 0 || len(v["messages"].([]any)) < 2 {
		t.Errorf("thread view incomplete: %v", v)
	}
	rep := e.get("/api/threads/h1/report.md")
	body, _ := io.ReadAll(rep.Body)
	rep.Body.Close()
	if rep.StatusCode != 200 || !strings.HasPrefix(rep.Header.Get("Content-Type"), "text/markdown") || !strings.Contains(string(body), "# Eiffel") {
		t.Errorf("report.md: %d %s", rep.StatusCode, body)
	}
	del, _ := http.NewRequest("DELETE", e.base+"/api/threads/h1", nil)
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != 204 {
		t.Fatalf("delete: %d", dresp.StatusCode)
	}
	for _, p := range []string{"/api/threads/h1", "/api/threads/h1/report.md", "/api/threads/h1/stream"} {
		r := e.get(p)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 404 || !json.Valid(b) {
			t.Errorf("%s after delete: %d %s", p, r.StatusCode, b)
		}
	}
	bad := e.get("/api/threads?limit=0")
	bad.Body.Close()
	if bad.StatusCode != 422 {
		t.Errorf("limit=0: %d", bad.StatusCode)
	}
}

func TestCompactedLogReplaysTheSameText(t *testing.T) {
	s := &script{}
	e2 := newEnvCompact(t, s, 50*time.Millisecond)
	before := e2.chat(with(baseBody("cmp", "Eiffel Tower?"), "auto_accepted_plan", true))
	time.Sleep(400 * time.Millisecond)
	r := e2.get("/api/threads/cmp/stream?after=0")
	after := readSSE(t, r.Body)
	r.Body.Close()
	if len(after) >= len(before) {
		t.Fatalf("log not compacted: %d events before, %d after", len(before), len(after))
	}
	text := func(evs []sseEvent, agent string) string {
		var b strings.Builder
		for _, ev := range evs {
			if ev.Name == "message_chunk" && ev.Data["agent"] == agent {
				c, _ := ev.Data["content"].(string)
				b.WriteString(c)
			}
		}
		return b.String()
	}
	for _, agent := range []string{"planner", "researcher", "reporter"} {
		if text(before, agent) != text(after, agent) {
			t.Errorf("%s text changed by compaction", agent)
		}
	}
	checkContract(t, after, "cmp")
}

func newEnvCompact(t *testing.T, s *script, after time.Duration) *env {
	e := newEnvWith(t, s.respond, after)
	s.site = e.site.URL
	return e
}
