package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	mcpproto "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// stdioServerEnv makes the test binary serve MCP over stdio instead of
// running tests, so stdio tests need no external interpreter.
const stdioServerEnv = "DEER_GO_MCP_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		if err := mcpserver.ServeStdio(newTestMCPServer()); err != nil {
			fmt.Fprintln(os.Stderr, "stdio server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newTestMCPServer has one tool per behaviour the client must handle.
func newTestMCPServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("deer-go-test", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpproto.NewTool("echo",
		mcpproto.WithDescription("Echo the text back."),
		mcpproto.WithString("text", mcpproto.Required(), mcpproto.Description("Text to echo.")),
	), func(_ context.Context, req mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcpproto.NewToolResultError(err.Error()), nil
		}
		return mcpproto.NewToolResultText("echo: " + text), nil
	})
	s.AddTool(mcpproto.NewTool("fail", mcpproto.WithDescription("Always fails.")),
		func(context.Context, mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
			return mcpproto.NewToolResultError("boom"), nil
		})
	s.AddTool(mcpproto.NewTool("sleep",
		mcpproto.WithDescription("Sleep for ms milliseconds."),
		mcpproto.WithNumber("ms", mcpproto.Required()),
	), func(ctx context.Context, req mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
		d := time.Duration(req.GetFloat("ms", 0)) * time.Millisecond
		select {
		case <-time.After(d):
			return mcpproto.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.AddTool(mcpproto.NewTool("pid", mcpproto.WithDescription("Process id of the server.")),
		func(context.Context, mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
			return mcpproto.NewToolResultText(strconv.Itoa(os.Getpid())), nil
		})
	s.AddTool(mcpproto.NewTool("getenv",
		mcpproto.WithDescription("Read an environment variable of the server."),
		mcpproto.WithString("name", mcpproto.Required()),
	), func(_ context.Context, req mcpproto.CallToolRequest) (*mcpproto.CallToolResult, error) {
		v, ok := os.LookupEnv(req.GetString("name", ""))
		if !ok {
			return mcpproto.NewToolResultText("<unset>"), nil
		}
		return mcpproto.NewToolResultText(v), nil
	})
	return s
}

// rpcCounter counts the JSON-RPC methods and HTTP requests a server sees.
type rpcCounter struct {
	mu       sync.Mutex
	requests int
	methods  map[string]int
}

func (c *rpcCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Method string `json:"method"`
		}
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if len(body) > 0 && json.Unmarshal(body, &msg) != nil {
				msg.Method = "<batch or invalid>"
			}
		}
		c.mu.Lock()
		c.requests++
		if msg.Method != "" {
			if c.methods == nil {
				c.methods = map[string]int{}
			}
			c.methods[msg.Method]++
		}
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (c *rpcCounter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.methods[method]
}

func (c *rpcCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// testServer is a real MCP server on a loopback httptest server that can be
// stopped and started again on the same address.
type testServer struct {
	t         *testing.T
	transport string
	addr      string
	ts        *httptest.Server
	calls     *rpcCounter
}

func startTestServer(t *testing.T, transport string) *testServer {
	t.Helper()
	s := &testServer{t: t, transport: transport}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// reservedAddr returns a loopback address nothing listens on.
func reservedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// downTestServer knows its address but is not running yet.
func downTestServer(t *testing.T, transport string) *testServer {
	t.Helper()
	s := &testServer{t: t, transport: transport, addr: reservedAddr(t)}
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) start() {
	s.t.Helper()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var l net.Listener
	var err error
	// The old socket of a restarted server may linger for a moment.
	for range 50 {
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("listen %s: %v", addr, err)
	}
	s.addr = l.Addr().String()
	s.calls = &rpcCounter{}
	var h http.Handler
	switch s.transport {
	case TransportStreamableHTTP:
		h = mcpserver.NewStreamableHTTPServer(newTestMCPServer())
	case TransportSSE:
		h = mcpserver.NewSSEServer(newTestMCPServer())
	default:
		s.t.Fatalf("unknown transport %q", s.transport)
	}
	ts := httptest.NewUnstartedServer(s.calls.wrap(h))
	ts.Listener = l
	ts.Start()
	s.ts = ts
}

func (s *testServer) stop() {
	if s.ts == nil {
		return
	}
	// SSE streams never end on their own.
	s.ts.CloseClientConnections()
	s.ts.Close()
	s.ts = nil
}

func (s *testServer) url() string {
	if s.transport == TransportSSE {
		return "http://" + s.addr + "/sse"
	}
	return "http://" + s.addr + "/mcp"
}

func (s *testServer) config(name string) ServerConfig {
	return ServerConfig{Name: name, Transport: s.transport, URL: s.url()}
}

// testLogger logs to the test; lines from transport goroutines that outlive
// the test are dropped rather than reported against a finished test.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

// newTestRegistry shortens the connect timeout and backoff so failure paths
// run in milliseconds, and closes the registry when the test ends.
func newTestRegistry(t *testing.T, backoff time.Duration, servers ...ServerConfig) *Registry {
	t.Helper()
	r := NewRegistry(servers, testLogger(t))
	for _, s := range r.servers {
		s.connectTimeout = 2 * time.Second
		s.backoff = backoff
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}
