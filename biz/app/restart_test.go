package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deer-go/deer-go/internal/testkit"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBinary builds deer-go once for the subprocess tests.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deer-go-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "deer-go")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/deer-go/deer-go").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is the server running as a separate process on a data directory.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	base    string
	exited  chan struct{} // closed when the process has exited; waitErr is then set
	waitErr error
	logPath string
}

func startProc(t *testing.T, dataDir string, llm *testkit.LLM, search *testkit.Search, extraEnv ...string) *proc {
	t.Helper()
	port := closedPort(t)
	_, p, _ := strings.Cut(port, ":")
	logPath := filepath.Join(dataDir, fmt.Sprintf("server-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(serverBinary(t), "serve")
	cmd.Dir = dataDir // no conf/config.yaml or .env there
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dataDir, "HOST=127.0.0.1", "PORT=" + p, "DATA_DIR=" + dataDir,
		"LLM_BASE_URL=" + llm.URL, "LLM_MODEL=fake-basic", "LLM_MAX_RETRIES=1",
		"SEARCH_API=searxng", "SEARX_HOST=" + search.URL, "CRAWL_ALLOW_PRIVATE=true", "ENABLE_PYTHON_REPL=true",
		"SHUTDOWN_GRACE=3s", "LOG_LEVEL=debug",
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr := &proc{t: t, cmd: cmd, base: "http://127.0.0.1:" + p, exited: make(chan struct{}), logPath: logPath}
	go func() {
		pr.waitErr = cmd.Wait()
		logf.Close()
		close(pr.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-pr.exited:
		default:
			if err := cmd.Process.Kill(); err != nil {
				t.Logf("kill: %v", err)
			}
			<-pr.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server log %s:\n%s", logPath, b)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(pr.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return pr
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("server did not start: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startRun starts a research on the server without waiting for it; the stream is read and dropped, and it breaks
// when the test kills the server, which is the point.
func (p *proc) startRun(body any) {
	go func() {
		resp, err := http.Post(p.base+"/api/chat/stream", "application/json", strings.NewReader(mustJSON(body)))
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return // the server died mid-stream
		}
	}()
}

func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	<-p.exited
}

func (p *proc) post(body any) *http.Response {
	p.t.Helper()
	resp, err := http.Post(p.base+"/api/chat/stream", "application/json", strings.NewReader(mustJSON(body)))
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

func (p *proc) thread(id string) map[string]any {
	p.t.Helper()
	resp, err := http.Get(p.base + "/api/threads/" + id)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		p.t.Fatal(err)
	}
	return v
}

func countAgent(l *testkit.LLM, agent string) int {
	n := 0
	for _, r := range l.Requests() {
		if agentOf(r) == agent {
			n++
		}
	}
	return n
}

func TestRestartDuringPlanReview(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	s := &script{}
	llm := testkit.NewLLM(t, s.respond)
	search, site := testkit.NewSearch(t), testkit.NewSite(t)
	s.site = site.URL
	dir := t.TempDir()
	p1 := startProc(t, dir, llm, search)
	resp := p1.post(baseBody("r1", "Eiffel Tower?"))
	first := readSSE(t, resp.Body)
	resp.Body.Close()
	if last(first).Name != "interrupt" {
		t.Fatalf("no plan review: %v", ids(first))
	}
	p1.kill()

	p2 := startProc(t, dir, llm, search)
	if v := p2.thread("r1"); v["status"] != "waiting_for_review" || v["interrupt"] == nil {
		t.Fatalf("after restart: %v", v)
	}
	resp = p2.post(with(baseBody("r1", "Go ahead."), "interrupt_feedback", "accepted"))
	second := readSSE(t, resp.Body)
	resp.Body.Close()
	checkContract(t, second, "r1")
	if last(second).Name != "citations" || second[0].Data["agent"] != "researcher" {
		t.Fatalf("resumed run: %v", ids(second))
	}
	if countAgent(llm, "planner") != 1 {
		t.Errorf("the plan was made %d times", countAgent(llm, "planner"))
	}
}

func TestRestartDuringAStep(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	s := &script{}
	coderStarted := make(chan struct{}, 1)
	slowCoder := func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		if agentOf(req) == "coder" && len(req.ToolResults()) == 0 {
			select {
			case coderStarted <- struct{}{}:
			default:
			}
			r.Delay = 2 * time.Second // the server is killed while it waits
		}
		return r
	}
	llm := testkit.NewLLM(t, slowCoder)
	search, site := testkit.NewSearch(t), testkit.NewSite(t)
	s.site = site.URL
	dir := t.TempDir()
	p1 := startProc(t, dir, llm, search)
	p1.startRun(with(baseBody("r2", "Eiffel Tower?"), "auto_accepted_plan", true))
	select {
	case <-coderStarted:
	case <-time.After(20 * time.Second):
		t.Fatal("the coder step never started")
	}
	researcherCalls := countAgent(llm, "researcher")
	p1.kill()

	p2 := startProc(t, dir, llm, search)
	v := p2.thread("r2")
	if v["status"] != "interrupted" {
		t.Fatalf("status after a crash: %v", v["status"])
	}
	steps := v["plan"].(map[string]any)["steps"].([]any)
	if steps[0].(map[string]any)["status"] != "done" {
		t.Fatalf("the finished step was lost: %v", steps)
	}
	resp := p2.post(map[string]any{"thread_id": "r2", "interrupt_feedback": "resume"})
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || last(evs).Name != "citations" {
		t.Fatalf("resume: %d %v", resp.StatusCode, ids(evs))
	}
	if evs[0].Data["agent"] != "coder" {
		t.Errorf("resumed at %v, want the coder step", evs[0].Data["agent"])
	}
	if got := countAgent(llm, "researcher"); got != researcherCalls {
		t.Errorf("the finished research step was redone: %d researcher calls, had %d", got, researcherCalls)
	}
	if v := p2.thread("r2"); v["status"] != "done" {
		t.Errorf("final status %v", v["status"])
	}
	// The thread's whole log, across both processes, has increasing ids with no gap.
	r, err := http.Get(p2.base + "/api/threads/r2/stream?after=0")
	if err != nil {
		t.Fatal(err)
	}
	all := readSSE(t, r.Body)
	r.Body.Close()
	for i, ev := range all {
		if ev.ID != fmt.Sprint(i+1) {
			t.Fatalf("event %d has id %s", i, ev.ID)
		}
	}
}

func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	s := &script{}
	started := make(chan struct{}, 1)
	llm := testkit.NewLLM(t, func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		if agentOf(req) == "researcher" {
			select {
			case started <- struct{}{}:
			default:
			}
			r.ChunkDelay = 100 * time.Millisecond
		}
		return r
	})
	search, site := testkit.NewSearch(t), testkit.NewSite(t)
	s.site = site.URL
	dir := t.TempDir()
	p1 := startProc(t, dir, llm, search)
	done := make(chan []sseEvent, 1)
	go func() {
		resp, err := http.Post(p1.base+"/api/chat/stream", "application/json", strings.NewReader(mustJSON(with(baseBody("g1", "Eiffel Tower?"), "auto_accepted_plan", true))))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		done <- readSSE(t, resp.Body)
	}()
	<-started
	if err := p1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var evs []sseEvent
	select {
	case evs = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("stream did not end after SIGTERM")
	}
	if l := last(evs); l.Name != "error" || l.Data["reason"] != "interrupted" {
		t.Fatalf("stream ends with %s", l.Raw)
	}
	select {
	case <-p1.exited:
		if p1.waitErr != nil {
			t.Fatalf("exit: %v", p1.waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit")
	}
	p2 := startProc(t, dir, llm, search)
	if v := p2.thread("g1"); v["status"] != "interrupted" {
		t.Fatalf("status after shutdown: %v", v["status"])
	}
	resp := p2.post(map[string]any{"thread_id": "g1", "interrupt_feedback": "resume"})
	rest := readSSE(t, resp.Body)
	resp.Body.Close()
	if last(rest).Name != "citations" {
		t.Fatalf("resume after shutdown: %v", ids(rest))
	}
}

func TestResumeOnStart(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	s := &script{}
	started := make(chan struct{}, 1)
	llm := testkit.NewLLM(t, func(req *testkit.ChatRequest) testkit.Reply {
		r := s.respond(req)
		if agentOf(req) == "coder" && len(req.ToolResults()) == 0 {
			select {
			case started <- struct{}{}:
				r.Delay = 2 * time.Second // only the first attempt is slow: the server dies during it
			default:
			}
		}
		return r
	})
	search, site := testkit.NewSearch(t), testkit.NewSite(t)
	s.site = site.URL
	dir := t.TempDir()
	p1 := startProc(t, dir, llm, search)
	p1.startRun(with(baseBody("ros", "Eiffel Tower?"), "auto_accepted_plan", true))
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the coder step never started")
	}
	p1.kill()
	p2 := startProc(t, dir, llm, search, "RESUME_ON_START=true")
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := p2.thread("ros")
		if v["status"] == "done" {
			if v["report"] == "" {
				t.Fatal("resumed run has no report")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run was not resumed on start: status %v", v["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
