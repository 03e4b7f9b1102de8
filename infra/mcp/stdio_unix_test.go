//go:build unix

package mcp

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stdioConfig runs this test binary as the MCP server, vetted by a Policy
// that allows exactly that binary.
func stdioConfig(t *testing.T, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServerConfig{
		Name:      name,
		Transport: TransportStdio,
		Command:   exe,
		// The race detector otherwise holds every exiting child for a second.
		Env: map[string]string{stdioServerEnv: "1", "GORACE": "atexit_sleep_ms=0"},
	}
	if err := (Policy{AllowedCommands: []string{exe}}).Validate(cfg); err != nil {
		t.Fatalf("policy rejects the test server: %v", err)
	}
	return cfg
}

func pidOf(t *testing.T, out string) int {
	t.Helper()
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("pid tool returned %q", out)
	}
	return pid
}

// processGone reports whether pid has exited and been reaped; a zombie
// still counts as present, so this also proves the child was waited for.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestStdioRegistry(t *testing.T) {
	t.Setenv("DEER_GO_TEST_SECRET", "hunter2")
	r := NewRegistry([]ServerConfig{stdioConfig(t, "local")}, testLogger(t))
	r.servers[0].backoff = 0
	closed := false
	t.Cleanup(func() {
		if !closed {
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})

	if st := r.Status()[0]; st.Connected || !st.LastAttempt.IsZero() {
		t.Fatalf("connected before first use: %+v", st)
	}
	tools := r.Tools(context.Background(), "researcher")
	if len(tools) != 5 {
		t.Fatalf("got %d tools, want 5: %+v", len(tools), r.Status())
	}
	cases := []struct{ tool, args, want string }{
		{"echo", `{"text":"over stdio"}`, "echo: over stdio"},
		{"fail", `{}`, "Error: boom"},
		{"getenv", `{"name":"DEER_GO_TEST_SECRET"}`, "<unset>"},
		{"getenv", `{"name":"` + stdioServerEnv + `"}`, "1"},
	}
	for _, tc := range cases {
		if got := call(t, findTool(t, tools, tc.tool), tc.args); got != tc.want {
			t.Errorf("%s(%s) = %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	if got := call(t, findTool(t, tools, "getenv"), `{"name":"PATH"}`); got == "<unset>" {
		t.Errorf("stdio server has no PATH")
	}

	pid := pidOf(t, call(t, findTool(t, tools, "pid"), ""))
	for range 3 {
		again := pidOf(t, call(t, findTool(t, r.Tools(context.Background(), "researcher"), "pid"), ""))
		if again != pid {
			t.Fatalf("Tools started a second server (pid %d, then %d)", pid, again)
		}
	}

	// A crashed server is replaced on the next use.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	echo := findTool(t, tools, "echo")
	if got := call(t, echo, `{"text":"x"}`); !strings.HasPrefix(got, "Error: ") {
		t.Fatalf("call to a dead server = %q", got)
	}
	if got := call(t, echo, `{"text":"back"}`); got != "echo: back" {
		t.Fatalf("call after restart = %q", got)
	}
	newPid := pidOf(t, call(t, findTool(t, tools, "pid"), ""))
	if newPid == pid {
		t.Fatalf("server was not restarted")
	}

	closed = true
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !processGone(newPid) {
		t.Errorf("stdio server %d outlived Close", newPid)
	}
}

func TestStdioToolsFor(t *testing.T) {
	cfg := stdioConfig(t, "per-request")
	cfg.EnabledTools = []string{"pid", "echo"}
	cfg.AddToAgents = []string{"coder"}

	tools, closer, err := ToolsFor(context.Background(), cfg, "researcher", testLogger(t))
	if err != nil || len(tools) != 0 {
		t.Fatalf("researcher: %d tools, err %v; want none", len(tools), err)
	}
	if err := closer(); err != nil {
		t.Fatal(err)
	}

	tools, closer, err = ToolsFor(context.Background(), cfg, "coder", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, tools); strings.Join(got, ",") != "echo,pid" {
		t.Fatalf("tools = %v", got)
	}
	pid := pidOf(t, call(t, findTool(t, tools, "pid"), "{}"))
	if err := closer(); err != nil {
		t.Fatalf("closer: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("stdio server %d outlived closer", pid)
	}
	if err := closer(); err != nil {
		t.Errorf("second closer call: %v", err)
	}
	if got := call(t, findTool(t, tools, "echo"), `{"text":"x"}`); !strings.HasPrefix(got, "Error: ") {
		t.Errorf("call after close = %q", got)
	}
}

func TestStdioBadCommand(t *testing.T) {
	cfg := ServerConfig{Name: "missing", Transport: TransportStdio, Command: "/nonexistent/deer-go-mcp"}
	r := newTestRegistry(t, time.Minute, cfg)
	if tools := r.Tools(context.Background(), "researcher"); len(tools) != 0 {
		t.Fatalf("got tools from a missing command")
	}
	if st := r.Status()[0]; st.Connected || !strings.Contains(st.Error, "start") {
		t.Errorf("status = %+v", st)
	}
	if _, err := ListTools(context.Background(), cfg); err == nil {
		t.Errorf("ListTools on a missing command succeeded")
	}
}
