package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpproto "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/infra/sandbox"
	"github.com/deer-go/deer-go/internal/testkit"
)

// mcpStdioEnv makes the test binary serve the lookup MCP server over stdio instead of running tests, so the stdio
// transport is exercised without an external interpreter.
const mcpStdioEnv = "DEER_GO_APP_MCP_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(mcpStdioEnv) == "1" {
		if err := mcpserver.ServeStdio(newLookupServer()); err != nil {
			fmt.Fprintln(os.Stderr, "stdio server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lookupAnswer is what the lookup MCP tool answers for key.
func lookupAnswer(key string) string {
	return "lookup(" + key + ") = 330 m, per the MCP knowledge base"
}

// newLookupServer is a real MCP server with one tool, "lookup".
func newLookupServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("deer-go-lookup", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpproto.NewTool("lookup",
		mcpproto.WithDescription("Look a fact up in the knowledge base."),
		mcpproto.WithString("key", mcpproto.Required(), mcpproto.Description("What to look up.")),
	), func(_ context.Context, req mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
		key, err := req.RequireString("key")
		if err != nil {
			return mcpproto.NewToolResultError(err.Error()), nil
		}
		return mcpproto.NewToolResultText(lookupAnswer(key)), nil
	})
	return s
}

// startLookupHTTP serves the lookup server on loopback over streamable HTTP or SSE and returns its endpoint URL.
// Start it before the service so that its cleanup runs after the service has closed its sessions.
func startLookupHTTP(t *testing.T, transport string) string {
	t.Helper()
	var h http.Handler
	path := "/mcp"
	switch transport {
	case "streamable_http":
		h = mcpserver.NewStreamableHTTPServer(newLookupServer())
	case "sse":
		h, path = mcpserver.NewSSEServer(newLookupServer()), "/sse"
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		// SSE streams never end on their own.
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + path
}

// stdioLookup describes this test binary as a stdio MCP server.
func stdioLookup(t *testing.T) (exe string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The race detector otherwise holds every exiting child for a second.
	return exe, map[string]string{mcpStdioEnv: "1", "GORACE": "atexit_sleep_ms=0"}
}

// toolCallNames maps every announced tool call id to its tool name.
func toolCallNames(evs []sseEvent) map[string]string {
	names := map[string]string{}
	for _, ev := range evs {
		tcs, _ := ev.Data["tool_calls"].([]any)
		for _, tc := range tcs {
			m, _ := tc.(map[string]any)
			if id, _ := m["id"].(string); id != "" {
				names[id] = fmt.Sprint(m["name"])
			}
		}
	}
	return names
}

// toolOutputs returns, in order, the tool_call_result contents of the named tool.
func toolOutputs(evs []sseEvent, tool string) []string {
	names := toolCallNames(evs)
	var out []string
	for _, ev := range evs {
		if ev.Name == "tool_call_result" && names[fmt.Sprint(ev.Data["tool_call_id"])] == tool {
			c, _ := ev.Data["content"].(string)
			out = append(out, c)
		}
	}
	return out
}

// citationsOf returns url → source_type of the stream's citations event.
func citationsOf(evs []sseEvent) map[string]string {
	out := map[string]string{}
	for _, ev := range evs {
		if ev.Name != "citations" {
			continue
		}
		cs, _ := ev.Data["citations"].([]any)
		for _, c := range cs {
			m, _ := c.(map[string]any)
			out[fmt.Sprint(m["url"])] = fmt.Sprint(m["source_type"])
		}
	}
	return out
}

// agentRequests returns the model requests one agent made.
func agentRequests(l *testkit.LLM, agent string) []*testkit.ChatRequest {
	var out []*testkit.ChatRequest
	for _, r := range l.Requests() {
		if agentOf(r) == agent {
			out = append(out, r)
		}
	}
	return out
}

// requireReport fails unless the run ended without an error and stored a report with every step done.
func requireReport(t *testing.T, e *env, evs []sseEvent, thread string) {
	t.Helper()
	for _, ev := range evs {
		if ev.Name == "error" {
			t.Fatalf("run failed: %s", ev.Raw)
		}
	}
	st := e.state(thread)
	if st == nil || st.Plan == nil || st.FinalReport == "" {
		t.Fatalf("no report: %+v", st)
	}
	for _, s := range st.Plan.Steps {
		if s.Status != "done" {
			t.Errorf("step %q is %q (%s)", s.Title, s.Status, s.Error)
		}
	}
}

// toolsBody is a research request that skips plan review and background search, so the tools under test are the
// only ones that run.
func toolsBody(thread string) map[string]any {
	return with(baseBody(thread, "How tall is the Eiffel Tower?"), "auto_accepted_plan", true, "enable_background_investigation", false)
}

// noPython keeps the sandbox probe out of tests that do not need it.
func noPython(c *conf.Config) { c.Python.Enabled = false }

func TestToolsSearchEngines(t *testing.T) {
	const key = "test-search-key"
	hits := []testkit.SearchHit{
		{Title: "Eiffel Tower", URL: "https://arxiv.org/abs/2401.00001v1", Content: "The Eiffel Tower is 330 metres tall."},
		{Title: "Burj Khalifa", URL: "https://arxiv.org/abs/2401.00002v1", Content: "The Burj Khalifa is 828 metres tall."},
	}
	hitURLs := []string{hits[0].URL, hits[1].URL}
	// Wikipedia serves titles only; the client derives the article links.
	wikiURLs := []string{"https://en.wikipedia.org/wiki/Eiffel_Tower", "https://en.wikipedia.org/wiki/Burj_Khalifa"}
	const image = "https://img.example.com/eiffel-night.jpg"
	tests := []struct {
		engine    string
		configure func(c *conf.SearchConfig, base string)
		wantURLs  []string
		wantImage bool
	}{
		{conf.EngineTavily, func(c *conf.SearchConfig, base string) { c.TavilyBaseURL, c.TavilyAPIKey = base, key }, hitURLs, true},
		{conf.EngineSearxNG, func(c *conf.SearchConfig, base string) { c.SearxHost = base }, hitURLs, false},
		{conf.EngineDuckDuckGo, func(c *conf.SearchConfig, base string) { c.DDGBaseURL = base }, hitURLs, false},
		{conf.EngineBrave, func(c *conf.SearchConfig, base string) { c.BraveBaseURL, c.BraveAPIKey = base, key }, hitURLs, false},
		{conf.EngineWikipedia, func(c *conf.SearchConfig, base string) { c.WikipediaBaseURL = base }, wikiURLs, false},
		{conf.EngineArxiv, func(c *conf.SearchConfig, base string) { c.ArxivBaseURL = base }, hitURLs, false},
		{conf.EngineJina, func(c *conf.SearchConfig, base string) {
			c.JinaBaseURL, c.JinaAPIKey = base+testkit.SearchJinaPath, key
		}, hitURLs, false},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			t.Parallel()
			fake := testkit.NewSearchAll(t)
			fake.Add("", hits...)
			fake.AddImages("", testkit.SearchImage{URL: image, Description: "The tower at night"})
			fake.RequireKey(key) // Tavily, Brave and Jina must send the configured key
			s := &script{plan: func(*testkit.ChatRequest) string { return planJSON("Heights", "research") }}
			s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
				if agent != "researcher" {
					return testkit.Reply{}, false
				}
				if len(req.ToolResults()) == 0 {
					return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("web_search", map[string]string{"query": "Eiffel Tower height"})}}, true
				}
				return testkit.Reply{Content: "## Findings\nThe Eiffel Tower is 330 m tall."}, true
			}
			e := newEnv(t, s.respond, noPython, func(c *conf.Config) {
				c.Search = conf.Default().Search
				c.Search.Engine = tt.engine
				tt.configure(&c.Search, fake.URL)
			})
			s.site = e.site.URL
			thread := "search-" + tt.engine
			start := time.Now()
			evs := e.chat(toolsBody(thread))
			t.Logf("%s: %d events in %s", tt.engine, len(evs), time.Since(start))
			checkContract(t, evs, thread)
			requireReport(t, e, evs, thread)
			if q := fake.Queries(); !slices.Contains(q, "Eiffel Tower height") {
				t.Fatalf("the fake saw queries %q", q)
			}

			outs := toolOutputs(evs, "web_search")
			if len(outs) != 1 {
				t.Fatalf("web_search results: %q", outs)
			}
			var results []map[string]any
			if err := json.Unmarshal([]byte(outs[0]), &results); err != nil {
				t.Fatalf("web_search result is not a JSON array: %v\n%s", err, outs[0])
			}
			var pages, images []string
			for _, r := range results {
				switch r["type"] {
				case "page":
					if r["title"] == "" || r["content"] == "" || r["url"] == "" {
						t.Errorf("incomplete page: %v", r)
					}
					pages = append(pages, fmt.Sprint(r["url"]))
				case "image":
					images = append(images, fmt.Sprint(r["image_url"]))
				default:
					t.Errorf("result of unknown type: %v", r)
				}
			}
			if !slices.Equal(pages, tt.wantURLs) {
				t.Errorf("page URLs = %q, want %q", pages, tt.wantURLs)
			}
			if tt.wantImage != (len(images) == 1 && images[0] == image) {
				t.Errorf("images = %q (want the fake's image: %v)", images, tt.wantImage)
			}

			cites := citationsOf(evs)
			if len(cites) != len(tt.wantURLs) {
				t.Errorf("citations %v, want exactly %q", cites, tt.wantURLs)
			}
			for _, u := range tt.wantURLs {
				if cites[u] != "web_search" {
					t.Errorf("citation %s: source_type %q, want web_search (all: %v)", u, cites[u], cites)
				}
			}
			// The reporter only hears of sources a tool returned.
			rep := agentRequests(e.llm, "reporter")
			if len(rep) == 0 || !strings.Contains(string(rep[len(rep)-1].Raw), tt.wantURLs[0]) {
				t.Error("the reporter was not given the search results' URLs")
			}
		})
	}
}

func TestToolsCrawl(t *testing.T) {
	tests := []struct {
		name         string
		allowPrivate bool
		path         string
		wantPrefix   string
		wantContains []string
		// wantCite is the crawl citation expected, relative to the site; "" means none.
		wantCite string
		// siteHits are the paths that must (or, when the guard is on, must not) have been fetched.
		siteHits []string
	}{
		{name: "guard blocks loopback", path: "/article", wantPrefix: "Error", wantContains: []string{"CRAWL_ALLOW_PRIVATE"}, siteHits: []string{"/article"}},
		{name: "guard blocks redirect source", path: "/redirect", wantPrefix: "Error", wantContains: []string{"CRAWL_ALLOW_PRIVATE"}, siteHits: []string{"/redirect", "/article"}},
		{name: "redirect followed", allowPrivate: true, path: "/redirect", wantPrefix: "{",
			wantContains: []string{testkit.SiteArticleTitle, `"url":"{site}/article"`}, wantCite: "/article", siteHits: []string{"/redirect", "/article"}},
		{name: "redirect chain cut", allowPrivate: true, path: "/redirect-chain/9", wantPrefix: "Error", wantContains: []string{"redirects"},
			siteHits: []string{"/redirect-chain/9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &script{plan: func(*testkit.ChatRequest) string { return planJSON("Crawl", "research") }}
			var target string
			s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
				if agent != "researcher" {
					return testkit.Reply{}, false
				}
				if len(req.ToolResults()) == 0 {
					return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("crawl_tool", map[string]string{"url": target})}}, true
				}
				return testkit.Reply{Content: "## Findings\nWhat the page said, or that it could not be read."}, true
			}
			e := newEnv(t, s.respond, noPython, func(c *conf.Config) { c.Crawl.AllowPrivate = tt.allowPrivate })
			s.site, target = e.site.URL, e.site.URL+tt.path
			thread := "crawl-" + strings.ReplaceAll(tt.name, " ", "-")
			evs := e.chat(toolsBody(thread))
			checkContract(t, evs, thread)
			requireReport(t, e, evs, thread)
			outs := toolOutputs(evs, "crawl_tool")
			if len(outs) != 1 {
				t.Fatalf("crawl_tool results: %q", outs)
			}
			got := strings.ReplaceAll(outs[0], e.site.URL, "{site}")
			if !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("result %q does not start with %q", got, tt.wantPrefix)
			}
			for _, w := range tt.wantContains {
				if !strings.Contains(got, w) {
					t.Errorf("result %q lacks %q", got, w)
				}
			}
			for _, p := range tt.siteHits {
				if hit := e.site.Hits(p) > 0; hit != tt.allowPrivate {
					t.Errorf("site path %s fetched=%v with allow_private=%v", p, hit, tt.allowPrivate)
				}
			}
			cites := citationsOf(evs)
			switch {
			case tt.wantCite == "" && len(cites) != 0:
				t.Errorf("a failed crawl produced citations: %v", cites)
			case tt.wantCite != "" && (len(cites) != 1 || cites[e.site.URL+tt.wantCite] != "crawl"):
				t.Errorf("citations %v, want only %s as crawl", cites, tt.wantCite)
			}
		})
	}
}

func TestToolsSandboxLimits(t *testing.T) {
	const secret = "s3cr3t-deer-go-value"
	t.Setenv("DEER_GO_TEST_SECRET", secret)
	timeout := 2 * time.Second

	var netHits atomic.Int32
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		netHits.Add(1)
		if _, err := fmt.Fprint(w, "reachable"); err != nil {
			return // the client went away
		}
	}))
	t.Cleanup(inside.Close)

	failed := func(t *testing.T, out string) {
		t.Helper()
		if !strings.HasPrefix(out, "Error executing code:\n```python\n") || !strings.Contains(out, "\n```\nError: ") {
			t.Errorf("not in the failure layout:\n%s", out)
		}
	}
	type sandboxCase struct {
		name  string
		code  string
		skip  string // why the host cannot enforce this limit
		check func(t *testing.T, out string)
	}
	cases := []sandboxCase{
		{name: "endless loop", code: "while True:\n    pass", check: func(t *testing.T, out string) {
			failed(t, out)
			if !strings.Contains(out, "timed out after "+timeout.String()) {
				t.Errorf("no timeout reported:\n%s", out)
			}
		}},
		{name: "memory bomb", code: "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))", check: func(t *testing.T, out string) {
			failed(t, out)
			if !strings.Contains(out, "MemoryError") {
				t.Errorf("no MemoryError:\n%s", out)
			}
		}},
		{name: "fork bomb", code: "import os\nwhile True:\n    os.fork()", check: func(t *testing.T, out string) {
			failed(t, out)
			if !strings.Contains(out, "BlockingIOError") {
				t.Errorf("fork was not refused by the process limit:\n%s", out)
			}
		}},
		{name: "environment secret", code: "import os\nprint(os.environ.get('DEER_GO_TEST_SECRET'))\nprint(sorted(os.environ))", check: func(t *testing.T, out string) {
			_, stdout, ok := strings.Cut(out, "\n```\nStdout: ")
			if !strings.HasPrefix(out, "Successfully executed:") || !ok || !strings.HasPrefix(stdout, "None\n") ||
				strings.Contains(stdout, secret) || strings.Contains(stdout, "DEER_GO_TEST_SECRET") {
				t.Errorf("the server's environment reached the sandbox:\n%s", out)
			}
		}},
		{name: "loopback network", code: fmt.Sprintf("import urllib.request\nprint(urllib.request.urlopen(%q, timeout=1).read())", inside.URL), check: func(t *testing.T, out string) {
			failed(t, out)
			if !strings.Contains(out, "URLError") {
				t.Errorf("the request did not fail to connect:\n%s", out)
			}
			if n := netHits.Load(); n != 0 {
				t.Errorf("the sandbox reached the host's loopback server %d times", n)
			}
		}},
	}
	s := &script{plan: func(*testkit.ChatRequest) string { return planJSON("Sandbox", "processing") }}
	var run []sandboxCase
	s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
		if agent != "coder" {
			return testkit.Reply{}, false
		}
		if n := len(req.ToolResults()); n < len(run) {
			return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("python_repl_tool", map[string]string{"code": run[n].code})}}, true
		}
		return testkit.Reply{Content: "None of the snippets could do harm."}, true
	}
	e := newEnv(t, s.respond, func(c *conf.Config) { c.Python.Timeout = timeout })
	s.site = e.site.URL
	iso := probeIsolation(t, e.cfg.Python)
	t.Logf("sandbox isolation: %+v", iso)
	if !iso.Memory {
		cases[1].skip = "no memory limit on this host: " + iso.Notes
	}
	if !iso.Processes {
		cases[2].skip = "the process limit is not enforced on this host (it would take the machine down): " + iso.Notes
	}
	if !iso.Network {
		cases[4].skip = "no network namespace on this host: " + iso.Notes
	}
	for _, c := range cases {
		if c.skip == "" {
			run = append(run, c)
		}
	}
	start := time.Now()
	evs := e.chat(toolsBody("sandbox"))
	t.Logf("%d snippets in %s", len(run), time.Since(start))
	checkContract(t, evs, "sandbox")
	requireReport(t, e, evs, "sandbox")
	outs := toolOutputs(evs, "python_repl_tool")
	if len(outs) != len(run) {
		t.Fatalf("%d python results for %d snippets: %q", len(outs), len(run), outs)
	}
	i := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			out := outs[i]
			i++
			if !strings.Contains(out, "```python\n"+c.code+"\n```") {
				t.Errorf("result is for other code:\n%s", out)
			}
			c.check(t, out)
		})
	}
}

// probeIsolation reports what the sandbox enforces on this host for the service's configuration; the interpreter is
// chosen as the service chooses it, since which plans work depends on whether the sandbox user can run it.
func probeIsolation(t *testing.T, cfg conf.PythonConfig) sandbox.Isolation {
	t.Helper()
	interp := cfg.Interpreter
	if interp == "" {
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			interp = "/usr/bin/python3"
		}
	}
	r, err := sandbox.New(sandbox.Options{Enabled: true, Timeout: cfg.Timeout, Python: interp})
	if err != nil {
		t.Skipf("no Python sandbox on this host: %v", err)
	}
	return r.Isolation()
}

// lookupScript makes the researcher call the lookup tool once and the coder answer without tools.
func lookupScript() *script {
	s := &script{plan: func(*testkit.ChatRequest) string { return planJSON("Lookup", "research", "processing") }}
	s.override = func(agent string, req *testkit.ChatRequest) (testkit.Reply, bool) {
		switch agent {
		case "researcher":
			if len(req.ToolResults()) == 0 {
				return testkit.Reply{ToolCalls: []testkit.ReplyToolCall{call("lookup", map[string]string{"key": "eiffel"})}}, true
			}
			return testkit.Reply{Content: "## Findings\nThe knowledge base says 330 m."}, true
		case "coder":
			return testkit.Reply{Content: "Nothing to compute."}, true
		}
		return testkit.Reply{}, false
	}
	return s
}

// checkLookupRun asserts the researcher was offered and used the lookup tool, and the coder was not offered it.
func checkLookupRun(t *testing.T, e *env, evs []sseEvent, thread string) {
	t.Helper()
	checkContract(t, evs, thread)
	requireReport(t, e, evs, thread)
	outs := toolOutputs(evs, "lookup")
	if len(outs) != 1 || outs[0] != lookupAnswer("eiffel") {
		t.Fatalf("lookup results %q, want [%q]", outs, lookupAnswer("eiffel"))
	}
	res := agentRequests(e.llm, "researcher")
	if len(res) == 0 {
		t.Fatal("the researcher never ran")
	}
	var lookup *testkit.ToolDef
	for i, td := range res[0].Tools {
		if td.Name == "lookup" {
			lookup = &res[0].Tools[i]
		}
	}
	if lookup == nil || !res[0].HasTool("web_search") {
		t.Fatalf("researcher tools %v lack lookup or web_search", toolDefNames(res[0]))
	}
	if lookup.Description != "Look a fact up in the knowledge base." || !strings.Contains(string(lookup.Parameters), `"key"`) {
		t.Errorf("lookup definition did not carry the server's description and schema: %+v", lookup)
	}
	for _, r := range agentRequests(e.llm, "coder") {
		if r.HasTool("lookup") {
			t.Error("the coder was offered lookup though add_to_agents names only the researcher")
		}
	}
}

func toolDefNames(r *testkit.ChatRequest) []string {
	var out []string
	for _, td := range r.Tools {
		out = append(out, td.Name)
	}
	return out
}

// mcpStatus fetches GET /api/config and returns its mcp.servers entries.
func mcpStatus(t *testing.T, e *env) []map[string]any {
	t.Helper()
	resp, err := http.Get(e.base + "/api/config")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		MCP struct {
			Servers        []map[string]any `json:"servers"`
			RequestServers *bool            `json:"request_servers"`
		} `json:"mcp"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/config: %d %v", resp.StatusCode, err)
	}
	if body.MCP.RequestServers == nil || *body.MCP.RequestServers != e.cfg.MCP.AllowRequestServers {
		t.Errorf("mcp.request_servers = %v, want %v", body.MCP.RequestServers, e.cfg.MCP.AllowRequestServers)
	}
	return body.MCP.Servers
}

func TestToolsMCPConfiguredServers(t *testing.T) {
	for _, transport := range []string{"streamable_http", "sse", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			srv := conf.MCPServer{Name: "kb", Transport: transport, AddToAgents: []string{"researcher"}}
			if transport == "stdio" {
				srv.Command, srv.Env = stdioLookup(t)
			} else {
				srv.URL = startLookupHTTP(t, transport)
			}
			s := lookupScript()
			e := newEnv(t, s.respond, noPython, func(c *conf.Config) { c.MCP.Servers = []conf.MCPServer{srv} })
			s.site = e.site.URL

			// Servers connect on first use, so the status starts out idle.
			before := mcpStatus(t, e)
			if len(before) != 1 || before[0]["name"] != "kb" || before[0]["transport"] != transport || before[0]["connected"] != false {
				t.Fatalf("status before use: %v", before)
			}
			start := time.Now()
			evs := e.chat(toolsBody("mcp-" + transport))
			t.Logf("%s: run in %s", transport, time.Since(start))
			checkLookupRun(t, e, evs, "mcp-"+transport)

			after := mcpStatus(t, e)
			if len(after) != 1 || after[0]["connected"] != true || fmt.Sprint(after[0]["tools"]) != "[lookup]" || after[0]["error"] != nil {
				t.Fatalf("status after use: %v", after)
			}
		})
	}
}

func TestToolsMCPRequestSettings(t *testing.T) {
	exe, stdioEnv := stdioLookup(t)
	httpURL := startLookupHTTP(t, "streamable_http")
	sseURL := startLookupHTTP(t, "sse")
	settings := func(server map[string]any) map[string]any {
		server["enabled_tools"] = []string{"lookup"}
		server["add_to_agents"] = []string{"researcher"}
		return map[string]any{"servers": map[string]any{"kb": server}}
	}
	allow := func(c *conf.Config) {
		c.MCP.AllowRequestServers = true
		c.MCP.AllowedCommands = []string{"python3", exe}
	}
	tests := []struct {
		name   string
		server map[string]any
	}{
		{"streamable_http", map[string]any{"transport": "streamable_http", "url": httpURL}},
		{"sse", map[string]any{"transport": "sse", "url": sseURL}},
		{"stdio", map[string]any{"transport": "stdio", "command": exe, "env": stdioEnv}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := lookupScript()
			e := newEnv(t, s.respond, noPython, allow)
			s.site = e.site.URL
			thread := "req-mcp-" + tt.name
			evs := e.chat(with(toolsBody(thread), "mcp_settings", settings(tt.server)))
			checkLookupRun(t, e, evs, thread)
			if st := mcpStatus(t, e); len(st) != 0 {
				t.Errorf("a request's server leaked into the operator's status: %v", st)
			}
		})
	}

	t.Run("rejected", func(t *testing.T) {
		t.Parallel()
		s := lookupScript()
		closed := newEnv(t, s.respond, noPython)
		open := newEnv(t, s.respond, noPython, allow)
		rejects := []struct {
			name     string
			e        *env
			server   map[string]any
			status   int
			contains string
		}{
			{"disabled", closed, map[string]any{"transport": "streamable_http", "url": httpURL}, http.StatusForbidden, "ENABLE_MCP_SERVER_CONFIGURATION"},
			{"command not allowed", open, map[string]any{"transport": "stdio", "command": "bash", "args": []string{"-c", "id"}}, http.StatusUnprocessableEntity, `"bash" is not an allowed command`},
			{"relative command", open, map[string]any{"transport": "stdio", "command": "./python3"}, http.StatusUnprocessableEntity, "relative paths"},
			{"blocked env", open, map[string]any{"transport": "stdio", "command": "python3", "env": map[string]string{"LD_PRELOAD": "/tmp/x.so"}}, http.StatusUnprocessableEntity, "env.LD_PRELOAD"},
		}
		for _, r := range rejects {
			thread := "rej-" + strings.ReplaceAll(r.name, " ", "-")
			resp := r.e.post("/api/chat/stream", with(toolsBody(thread), "mcp_settings", settings(r.server)))
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Detail string }
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("%s: error body %s: %v", r.name, b, err)
			}
			if resp.StatusCode != r.status || !strings.Contains(body.Detail, r.contains) {
				t.Errorf("%s: %d %s, want %d mentioning %q", r.name, resp.StatusCode, b, r.status, r.contains)
			}
		}
		if n := closed.llm.Count() + open.llm.Count(); n != 0 {
			t.Errorf("rejected requests reached the model %d times", n)
		}
	})
}

func TestToolsMCPMetadata(t *testing.T) {
	url := startLookupHTTP(t, "streamable_http")
	exe, stdioEnv := stdioLookup(t)
	s := &script{}
	open := newEnv(t, s.respond, noPython, func(c *conf.Config) {
		c.MCP.AllowRequestServers = true
		c.MCP.AllowedCommands = []string{exe}
	})
	closed := newEnv(t, s.respond, noPython)
	tests := []struct {
		name   string
		e      *env
		body   map[string]any
		status int
	}{
		{"streamable_http", open, map[string]any{"transport": "streamable_http", "url": url}, http.StatusOK},
		{"stdio", open, map[string]any{"transport": "stdio", "command": exe, "env": stdioEnv}, http.StatusOK},
		{"command not allowed", open, map[string]any{"transport": "stdio", "command": "node"}, http.StatusUnprocessableEntity},
		{"disabled", closed, map[string]any{"transport": "streamable_http", "url": url}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.e.post("/api/mcp/server/metadata", tt.body)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tt.status)
			}
			if tt.status != http.StatusOK {
				var e struct{ Detail string }
				if json.Unmarshal(b, &e) != nil || e.Detail == "" {
					t.Errorf("error body without detail: %s", b)
				}
				return
			}
			var meta struct {
				Transport string `json:"transport"`
				Tools     []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatalf("metadata %s: %v", b, err)
			}
			var names []string
			for _, tl := range meta.Tools {
				names = append(names, tl.Name)
				if !strings.Contains(string(tl.InputSchema), `"key"`) || tl.Description == "" {
					t.Errorf("tool %s lacks its schema or description: %s", tl.Name, b)
				}
			}
			sort.Strings(names)
			if meta.Transport != tt.body["transport"] || !slices.Equal(names, []string{"lookup"}) {
				t.Errorf("metadata %s", b)
			}
		})
	}
}
