package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
)

var httpTransports = []string{TransportStreamableHTTP, TransportSSE}

func toolNames(t *testing.T, tools []tool.InvokableTool) []string {
	t.Helper()
	var names []string
	for _, tl := range tools {
		info, err := tl.Info(context.Background())
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		names = append(names, info.Name)
	}
	slices.Sort(names)
	return names
}

func findTool(t *testing.T, tools []tool.InvokableTool, name string) tool.InvokableTool {
	t.Helper()
	for _, tl := range tools {
		info, err := tl.Info(context.Background())
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if info.Name == name {
			return tl
		}
	}
	t.Fatalf("tool %q not among %v", name, toolNames(t, tools))
	return nil
}

func call(t *testing.T, tl tool.InvokableTool, args string) string {
	t.Helper()
	out, err := tl.InvokableRun(context.Background(), args)
	if err != nil {
		t.Fatalf("InvokableRun(%s): unexpected Go error %v", args, err)
	}
	return out
}

func TestRegistryToolsAndCalls(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			r := newTestRegistry(t, time.Minute, srv.config("demo"))
			tools := r.Tools(context.Background(), "researcher")
			if got, want := toolNames(t, tools), []string{"echo", "fail", "getenv", "pid", "sleep"}; !slices.Equal(got, want) {
				t.Fatalf("tools = %v, want %v", got, want)
			}

			info, err := findTool(t, tools, "echo").Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.Desc != "Echo the text back." {
				t.Errorf("Desc = %q", info.Desc)
			}
			js, err := info.ParamsOneOf.ToJSONSchema()
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(js)
			if err != nil {
				t.Fatal(err)
			}
			var sch struct {
				Type       string `json:"type"`
				Properties map[string]struct {
					Type        string `json:"type"`
					Description string `json:"description"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(raw, &sch); err != nil {
				t.Fatal(err)
			}
			if sch.Type != "object" || sch.Properties["text"].Type != "string" ||
				sch.Properties["text"].Description != "Text to echo." || !slices.Equal(sch.Required, []string{"text"}) {
				t.Errorf("echo schema = %s", raw)
			}

			cases := []struct {
				name, tool, args, want string
			}{
				{"round trip", "echo", `{"text":"hi there"}`, "echo: hi there"},
				{"unicode", "echo", `{"text":"日本語 ✓"}`, "echo: 日本語 ✓"},
				{"isError result", "fail", `{}`, "Error: boom"},
				{"empty args", "pid", ``, ""},
				{"tool-side validation", "echo", `{}`, "Error: "},
				{"args not an object", "echo", `["x"]`, "Error: invalid arguments"},
				{"args not JSON", "echo", `{"text":`, "Error: invalid arguments"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					got := call(t, findTool(t, tools, tc.tool), tc.args)
					if !strings.HasPrefix(got, tc.want) {
						t.Errorf("got %q, want prefix %q", got, tc.want)
					}
					if tc.want == "" && (got == "" || strings.HasPrefix(got, "Error")) {
						t.Errorf("got %q, want a plain result", got)
					}
				})
			}
		})
	}
}

func TestRegistryFilters(t *testing.T) {
	srv := startTestServer(t, TransportStreamableHTTP)
	only := srv.config("only-echo")
	only.EnabledTools = []string{"echo", "missing"}
	coder := srv.config("coder-only")
	coder.AddToAgents = []string{"coder"}
	coder.EnabledTools = []string{"pid"}
	both := srv.config("both")
	both.AddToAgents = []string{"researcher", "coder"}
	both.EnabledTools = []string{"getenv", "echo"}

	r := newTestRegistry(t, time.Minute, only, coder, both)
	cases := []struct {
		agent string
		want  []string
	}{
		// "both" also offers echo; the first server keeps the name.
		{"researcher", []string{"echo", "getenv"}},
		{"coder", []string{"echo", "getenv", "pid"}},
		{"planner", nil},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			tools := r.Tools(context.Background(), tc.agent)
			if got := toolNames(t, tools); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
		})
	}
	echo := findTool(t, r.Tools(context.Background(), "researcher"), "echo")
	info, err := echo.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Extra["mcp_server"] != "only-echo" {
		t.Errorf("echo comes from %v, want only-echo", info.Extra["mcp_server"])
	}
	st := r.Status()
	if len(st) != 3 || !slices.Equal(st[0].Tools, []string{"echo"}) || !slices.Equal(st[1].Tools, []string{"pid"}) {
		t.Errorf("status = %+v", st)
	}
}

func TestRegistryLazyAndReused(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			coder := srv.config("for-coder")
			coder.AddToAgents = []string{"coder"}
			r := newTestRegistry(t, time.Minute, srv.config("demo"), coder)

			if n := srv.calls.total(); n != 0 {
				t.Fatalf("%d requests before first use, want none", n)
			}
			for _, st := range r.Status() {
				if st.Connected || !st.LastAttempt.IsZero() {
					t.Fatalf("status before first use = %+v", st)
				}
			}
			for i := range 5 {
				tools := r.Tools(context.Background(), "researcher")
				if got := call(t, findTool(t, tools, "echo"), `{"text":"x"}`); got != "echo: x" {
					t.Fatalf("call %d = %q", i, got)
				}
			}
			if n := srv.calls.count("tools/list"); n != 1 {
				t.Errorf("tools/list sent %d times, want 1 (one shared session)", n)
			}
			if n := srv.calls.count("tools/call"); n != 5 {
				t.Errorf("tools/call sent %d times, want 5", n)
			}
			st := r.Status()
			if !st[0].Connected || st[0].Error != "" || st[0].LastAttempt.IsZero() {
				t.Errorf("researcher server status = %+v", st[0])
			}
			if st[1].Connected || !st[1].LastAttempt.IsZero() {
				t.Errorf("coder-only server was touched: %+v", st[1])
			}
		})
	}
}

func TestRegistryCallTimeout(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			cfg := srv.config("slow")
			cfg.Timeout = 200 * time.Millisecond
			r := newTestRegistry(t, time.Minute, cfg)
			tools := r.Tools(context.Background(), "researcher")

			start := time.Now()
			got := call(t, findTool(t, tools, "sleep"), `{"ms":5000}`)
			if !strings.HasPrefix(got, "Error: ") || !strings.Contains(got, "timed out") {
				t.Errorf("got %q, want a timeout error text", got)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("call took %v, want about 200ms", d)
			}
			if got := call(t, findTool(t, tools, "sleep"), `{"ms":1}`); got != "slept" {
				t.Errorf("after timeout got %q", got)
			}
			if n := srv.calls.count("tools/list"); n != 1 {
				t.Errorf("a timeout forced a reconnect (%d tools/list)", n)
			}
		})
	}
}

func TestRegistryCallerCancelIsGoError(t *testing.T) {
	srv := startTestServer(t, TransportStreamableHTTP)
	r := newTestRegistry(t, time.Minute, srv.config("demo"))
	sleep := findTool(t, r.Tools(context.Background(), "researcher"), "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if out, err := sleep.InvokableRun(ctx, `{"ms":5000}`); err == nil {
		t.Errorf("got %q and no error for a cancelled run", out)
	}
}

func TestRegistryServerDownAtStart(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := downTestServer(t, tr)
			backoff := 300 * time.Millisecond
			r := newTestRegistry(t, backoff, srv.config("later"))

			if tools := r.Tools(context.Background(), "researcher"); len(tools) != 0 {
				t.Fatalf("got %d tools from a server that is down", len(tools))
			}
			st := r.Status()[0]
			if st.Connected || st.Error == "" || st.LastAttempt.IsZero() {
				t.Fatalf("status = %+v, want a recorded failure", st)
			}
			first := st.LastAttempt

			srv.start()
			// Within the backoff the server is not tried again.
			if tools := r.Tools(context.Background(), "researcher"); len(tools) != 0 {
				t.Fatalf("server retried inside the backoff")
			}
			if st := r.Status()[0]; !st.LastAttempt.Equal(first) || srv.calls.total() != 0 {
				t.Fatalf("retried inside the backoff: %+v, %d requests", st, srv.calls.total())
			}

			time.Sleep(backoff + 50*time.Millisecond)
			tools := r.Tools(context.Background(), "researcher")
			if got := call(t, findTool(t, tools, "echo"), `{"text":"up"}`); got != "echo: up" {
				t.Fatalf("after recovery got %q", got)
			}
			if st := r.Status()[0]; !st.Connected || st.Error != "" || len(st.Tools) != 5 {
				t.Errorf("status after recovery = %+v", st)
			}
		})
	}
}

func TestRegistryReconnectsAfterRestart(t *testing.T) {
	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			srv := startTestServer(t, tr)
			r := newTestRegistry(t, 0, srv.config("flaky"))
			echo := findTool(t, r.Tools(context.Background(), "researcher"), "echo")
			if got := call(t, echo, `{"text":"1"}`); got != "echo: 1" {
				t.Fatalf("first call = %q", got)
			}

			srv.stop()
			if got := call(t, echo, `{"text":"2"}`); !strings.HasPrefix(got, "Error: ") {
				t.Fatalf("call while down = %q, want an error text", got)
			}
			if st := r.Status()[0]; st.Connected {
				t.Errorf("status while down = %+v, want disconnected", st)
			}

			srv.start()
			// The same tool value keeps working: it reconnects on use.
			if got := call(t, echo, `{"text":"3"}`); got != "echo: 3" {
				t.Fatalf("call after restart = %q", got)
			}
			if n := srv.calls.count("tools/list"); n != 1 {
				t.Errorf("restarted server saw %d tools/list, want 1 (a new session)", n)
			}
			if st := r.Status()[0]; !st.Connected || st.Error != "" {
				t.Errorf("status after restart = %+v", st)
			}
		})
	}
}

func TestRegistryConnectTimeout(t *testing.T) {
	hang := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select { // never answers
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(hang) })

	for _, tr := range httpTransports {
		t.Run(tr, func(t *testing.T) {
			r := newTestRegistry(t, time.Minute, ServerConfig{Name: "hung", Transport: tr, URL: ts.URL + "/mcp"})
			r.servers[0].connectTimeout = 300 * time.Millisecond
			start := time.Now()
			if tools := r.Tools(context.Background(), "researcher"); len(tools) != 0 {
				t.Fatalf("got tools from a hung server")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Tools blocked %v, want about the connect timeout", d)
			}
			if st := r.Status()[0]; st.Error == "" {
				t.Errorf("status = %+v, want an error", st)
			}
		})
	}
}

func TestRegistryClosed(t *testing.T) {
	srv := startTestServer(t, TransportStreamableHTTP)
	r := NewRegistry([]ServerConfig{srv.config("demo")}, testLogger(t))
	echo := findTool(t, r.Tools(context.Background(), "researcher"), "echo")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := call(t, echo, `{"text":"x"}`); !strings.HasPrefix(got, "Error: ") || !strings.Contains(got, "closed") {
		t.Errorf("call after Close = %q", got)
	}
	if tools := r.Tools(context.Background(), "researcher"); len(tools) != 0 {
		t.Errorf("Tools after Close returned %d tools", len(tools))
	}
}

func TestRegistryConcurrentFirstUse(t *testing.T) {
	srv := startTestServer(t, TransportStreamableHTTP)
	r := newTestRegistry(t, time.Minute, srv.config("shared"))
	counts := make([]int, 8)
	var wg sync.WaitGroup
	for i := range counts {
		wg.Go(func() { counts[i] = len(r.Tools(context.Background(), "researcher")) })
	}
	wg.Wait()
	for i, n := range counts {
		if n != 5 {
			t.Errorf("caller %d got %d tools, want 5", i, n)
		}
	}
	if n := srv.calls.count("tools/list"); n != 1 {
		t.Errorf("%d sessions opened for concurrent callers, want 1", n)
	}
}
