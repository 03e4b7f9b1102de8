package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deer-go/deer-go/biz/app"
	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files")

// env is one running service wired to loopback fakes.
type env struct {
	t      testing.TB
	llm    *testkit.LLM
	search *testkit.Search
	site   *testkit.Site
	app    *app.App
	base   string
	cfg    *conf.Config
	// compactAfter is passed to the app; -1 (the default here) disables compaction.
	compactAfter time.Duration
}

type envOption func(*conf.Config)

func newEnv(t testing.TB, responder testkit.Responder, opts ...envOption) *env {
	t.Helper()
	return newEnvWith(t, responder, -1, opts...)
}

// newEnvWith is newEnv with event-log compaction after the given delay (negative: off).
func newEnvWith(t testing.TB, responder testkit.Responder, compactAfter time.Duration, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, search: testkit.NewSearch(t), site: testkit.NewSite(t), compactAfter: compactAfter}
	e.llm = testkit.NewLLM(t, responder)
	cfg := conf.Default()
	cfg.LLM.Basic = conf.ModelEndpoint{BaseURL: e.llm.URL, Model: "fake-basic", APIKey: "sk-test-secret", BaseURLEnv: "LLM_BASE_URL"}
	cfg.LLM.Timeout = 10 * time.Second
	cfg.Search.Engine = conf.EngineSearxNG
	cfg.Search.SearxHost = e.search.URL
	cfg.Crawl.AllowPrivate = true
	cfg.Python.Enabled = true
	cfg.Python.Timeout = 10 * time.Second
	cfg.Research.StepTimeout = 30 * time.Second
	cfg.Research.RunTimeout = time.Minute
	cfg.DataDir = t.TempDir()
	cfg.Runs.ShutdownGrace = 200 * time.Millisecond
	for _, o := range opts {
		o(cfg)
	}
	e.cfg = cfg
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a, err := app.New(context.Background(), cfg, app.Options{Logger: log, Heartbeat: 50 * time.Millisecond, ExitWait: 10 * time.Millisecond, CompactAfter: e.compactAfter})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	e.app = a
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := a.Server(ln)
	errc := make(chan error, 1)
	go func() { errc <- h.Run() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Runs.Shutdown(ctx, cfg.Runs.ShutdownGrace)
		if err := h.Shutdown(ctx); err != nil && ctx.Err() == nil {
			t.Logf("shutdown: %v", err)
		}
		if err := a.Close(ctx); err != nil {
			t.Errorf("close app: %v", err)
		}
		select {
		case err := <-errc:
			if err != nil {
				t.Logf("server stopped: %v", err)
			}
		case <-ctx.Done():
			t.Log("server did not stop in time")
		}
	})
	e.base = "http://" + ln.Addr().String()
	waitHealthy(t, e.base)
	return e
}

func waitHealthy(t testing.TB, base string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("server did not become healthy")
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	ID   string
	Name string
	Data map[string]any
	Raw  string
}

// chat posts a chat request and reads the whole stream, checking the framing rules the web client relies on.
func (e *env) chat(body map[string]any) []sseEvent {
	e.t.Helper()
	resp := e.post("/api/chat/stream", body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		e.t.Fatalf("content type %q", ct)
	}
	return readSSE(e.t, resp.Body)
}

func (e *env) post(path string, body any) *http.Response {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.Post(e.base+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func readSSE(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	text := string(raw)
	if strings.Contains(text, "\r") {
		t.Fatal("stream contains CR characters; the web client only splits on LF")
	}
	var out []sseEvent
	for _, block := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var ev sseEvent
		var kept []string
		for _, line := range strings.Split(block, "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				kept = append(kept, line)
			}
		}
		ev.Raw = strings.Join(kept, "\n")
		for _, line := range strings.Split(block, "\n") {
			switch {
			case line == "", strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if ev.Data != nil {
					t.Fatalf("event with several data lines: %q", block)
				}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data); err != nil {
					t.Fatalf("data is not one-line JSON: %q: %v", line, err)
				}
			default:
				t.Fatalf("unexpected line %q in %q", line, block)
			}
		}
		if ev.Name == "" && ev.Data == nil {
			continue // keep-alive comment
		}
		out = append(out, ev)
	}
	return out
}

// checkContract asserts §3.9 of the wire contract on a stream.
func checkContract(t *testing.T, evs []sseEvent, threadID string) {
	t.Helper()
	checkContractAfter(t, nil, evs, threadID)
}

// checkContractAfter checks a resumed stream: tool calls announced in the earlier streams may get their results
// in this one.
func checkContractAfter(t *testing.T, earlier, evs []sseEvent, threadID string) {
	t.Helper()
	known := map[string]bool{"message_chunk": true, "tool_calls": true, "tool_call_chunks": true, "tool_call_result": true, "interrupt": true, "citations": true, "error": true}
	agents := map[string]bool{"coordinator": true, "planner": true, "researcher": true, "coder": true, "analyst": true, "reporter": true}
	finished := map[string]bool{}
	open := map[string]bool{}
	var callIDs = map[string]bool{}
	for _, ev := range earlier {
		if tcs, ok := ev.Data["tool_calls"].([]any); ok {
			for _, tc := range tcs {
				callIDs[fmt.Sprint(tc.(map[string]any)["id"])] = true
			}
		}
	}
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	for i, ev := range evs {
		if !known[ev.Name] {
			t.Fatalf("unknown event name %q", ev.Name)
		}
		if ev.Data["thread_id"] != threadID {
			t.Fatalf("event %d thread_id = %v, want %s", i, ev.Data["thread_id"], threadID)
		}
		id, _ := ev.Data["id"].(string)
		switch ev.Name {
		case "message_chunk", "tool_calls", "tool_call_chunks":
			if id == "" || ev.Data["role"] != "assistant" || !agents[fmt.Sprint(ev.Data["agent"])] {
				t.Fatalf("event %d lacks id/role/agent: %s", i, ev.Raw)
			}
			if finished[id] {
				t.Fatalf("event %d continues finished message %s", i, id)
			}
			open[id] = true
			if ev.Name != "message_chunk" {
				if _, ok := ev.Data["tool_call_chunks"].([]any); !ok {
					t.Fatalf("event %d: tool_call_chunks must be an array: %s", i, ev.Raw)
				}
			}
			if ev.Name == "tool_calls" {
				for _, tc := range ev.Data["tool_calls"].([]any) {
					m := tc.(map[string]any)
					if m["name"] == "" {
						t.Fatalf("tool call without a name: %s", ev.Raw)
					}
					callIDs[fmt.Sprint(m["id"])] = true
				}
			}
			if ev.Data["finish_reason"] != nil {
				finished[id] = true
				delete(open, id)
			}
		case "tool_call_result":
			if !callIDs[fmt.Sprint(ev.Data["tool_call_id"])] {
				t.Fatalf("result for an unannounced call: %s", ev.Raw)
			}
		case "interrupt":
			if ev.Data["agent"] != nil || ev.Data["finish_reason"] != "interrupt" || finished[id] || open[id] {
				t.Fatalf("bad interrupt: %s", ev.Raw)
			}
			if i != len(evs)-1 {
				t.Fatal("interrupt is not the last event")
			}
		case "error":
			if i != len(evs)-1 {
				t.Fatal("error is not the last event")
			}
		}
		if ev.Data["content"] == "" {
			t.Fatalf("empty content must be omitted: %s", ev.Raw)
		}
	}
	if len(open) > 0 {
		t.Fatalf("messages never finished: %v", open)
	}
}

var (
	hexID   = regexp.MustCompile(`(run--|tool--)[0-9a-f]{24}`)
	uuidRe  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	portRe  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	callIDs = regexp.MustCompile(`call_[A-Za-z0-9_]+`)
)

// summarize renders a stream as stable lines for golden files: consecutive chunks of one message become one line.
func summarize(evs []sseEvent, e *env) string {
	ids := map[string]string{}
	name := func(s string) string {
		if s == "" {
			return ""
		}
		if _, ok := ids[s]; !ok {
			ids[s] = fmt.Sprintf("M%d", len(ids)+1)
		}
		return ids[s]
	}
	norm := func(s string) string {
		s = strings.ReplaceAll(s, e.site.URL, "{site}")
		s = strings.ReplaceAll(s, e.search.URL, "{search}")
		s = strings.ReplaceAll(s, e.llm.URL, "{llm}")
		s = hexID.ReplaceAllString(s, "{id}")
		s = uuidRe.ReplaceAllString(s, "{uuid}")
		return portRe.ReplaceAllString(s, "127.0.0.1:{port}")
	}
	var lines []string
	var cur struct {
		key, agent, id, content, reasoning string
		n                                  int
	}
	flush := func(finish string) {
		if cur.n == 0 && finish == "" {
			return
		}
		l := fmt.Sprintf("message_chunk x%d agent=%s id=%s", cur.n, cur.agent, cur.id)
		if cur.reasoning != "" {
			l += fmt.Sprintf(" reasoning=%q", norm(cur.reasoning))
		}
		if cur.content != "" {
			c := norm(cur.content)
			if len(c) > 600 {
				c = c[:600] + "…"
			}
			l += fmt.Sprintf(" content=%q", c)
		}
		if finish != "" {
			l += " finish=" + finish
		}
		lines = append(lines, l)
		cur.key, cur.n, cur.content, cur.reasoning = "", 0, "", ""
	}
	for _, ev := range evs {
		d := ev.Data
		id, _ := d["id"].(string)
		fr, _ := d["finish_reason"].(string)
		if ev.Name == "message_chunk" {
			if cur.key != id {
				flush("")
			}
			cur.key, cur.agent, cur.id = id, fmt.Sprint(d["agent"]), name(id)
			cur.n++
			if c, ok := d["content"].(string); ok {
				cur.content += c
			}
			if r, ok := d["reasoning_content"].(string); ok {
				cur.reasoning += r
			}
			if fr != "" {
				flush(fr)
			}
			continue
		}
		flush("")
		if ev.Name == "tool_call_chunks" {
			// Fragments split arbitrary text (ports included); the finishing tool_calls event shows the whole.
			if len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "tool_call_chunks ") {
				var n int
				fmt.Sscanf(lines[len(lines)-1], "tool_call_chunks x%d", &n)
				lines[len(lines)-1] = fmt.Sprintf("tool_call_chunks x%d agent=%s id=%s", n+1, d["agent"], name(id))
			} else {
				lines = append(lines, fmt.Sprintf("tool_call_chunks x1 agent=%s id=%s", d["agent"], name(id)))
			}
			continue
		}
		var l string
		switch ev.Name {
		case "tool_calls", "tool_call_chunks":
			var calls []string
			if tcs, ok := d["tool_calls"].([]any); ok {
				for _, tc := range tcs {
					m := tc.(map[string]any)
					args, _ := json.Marshal(m["args"])
					calls = append(calls, fmt.Sprintf("%s(%s)", m["name"], norm(string(args))))
				}
			}
			var frags []string
			for _, c := range d["tool_call_chunks"].([]any) {
				frags = append(frags, norm(fmt.Sprint(c.(map[string]any)["args"])))
			}
			l = fmt.Sprintf("%s agent=%s id=%s calls=%v chunks=%q", ev.Name, d["agent"], name(id), calls, frags)
			if fr != "" {
				l += " finish=" + fr
			}
		case "tool_call_result":
			c := norm(fmt.Sprint(d["content"]))
			if len(c) > 300 {
				c = c[:300] + "…"
			}
			l = fmt.Sprintf("tool_call_result agent=%s call=%s content=%q", d["agent"], callIDs.ReplaceAllString(fmt.Sprint(d["tool_call_id"]), "{call}"), c)
		case "interrupt":
			opts, _ := json.Marshal(d["options"])
			l = fmt.Sprintf("interrupt id=%s content=%q options=%s finish=%s", name(id), d["content"], opts, fr)
		case "citations":
			var urls []string
			for _, c := range d["citations"].([]any) {
				m := c.(map[string]any)
				urls = append(urls, fmt.Sprintf("%s[%s]", norm(fmt.Sprint(m["url"])), m["source_type"]))
			}
			sort.Strings(urls)
			l = fmt.Sprintf("citations %v", urls)
		case "error":
			l = fmt.Sprintf("error %q reason=%v", norm(fmt.Sprint(d["error"])), d["reason"])
		}
		lines = append(lines, l)
	}
	flush("")
	return strings.Join(lines, "\n") + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./biz/app -update): %v", err)
	}
	if string(want) != got {
		t.Errorf("stream differs from %s:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// scanLines reads SSE events from a live response one at a time.
func scanEvents(r io.Reader, n int) ([]string, error) {
	sc := bufio.NewScanner(r)
	var names []string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "event: ") {
			names = append(names, strings.TrimPrefix(l, "event: "))
			if len(names) >= n {
				return names, nil
			}
		}
	}
	return names, sc.Err()
}

var _ = sync.Mutex{}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// closedPort returns an address on which nothing listens.
func closedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// state returns a thread's stored research state.
func (e *env) state(id string) *model.State {
	e.t.Helper()
	st, err := e.app.Runs.State(context.Background(), id)
	if err != nil {
		e.t.Fatalf("state of %s: %v", id, err)
	}
	return st
}
