package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpproto "github.com/mark3labs/mcp-go/mcp"
)

const clientName = "deer-go"

// clientVersion is reported to servers in the handshake.
const clientVersion = "0.1.0"

// conn is one live MCP session together with the tools the server listed
// when it was opened.
type conn struct {
	cfg    ServerConfig
	client *mcpclient.Client
	tools  []mcpproto.Tool
	// built are the Eino wrappers of the enabled tools, made once per session.
	built []*mcpTool
	// cancel ends the context the transport lives on (the SSE stream).
	cancel context.CancelFunc
	// broken is set when a call or the transport itself reports a dead
	// connection, so the owner replaces it on next use.
	broken atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// dial connects to the server, completes the handshake and lists its tools,
// all within timeout.
func dial(ctx context.Context, cfg ServerConfig, timeout time.Duration, logger *slog.Logger) (*conn, error) {
	ctx, cancelDial := context.WithTimeout(ctx, timeout)
	defer cancelDial()

	tr, err := newTransport(cfg, timeout, logger)
	if err != nil {
		return nil, err
	}
	// The transport outlives this call (SSE reads its stream on the start
	// context), so it runs on its own context that is cut short only when the
	// dial itself is abandoned.
	life, cancelLife := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancelLife)
	c := &conn{cfg: cfg, client: mcpclient.NewClient(tr), cancel: cancelLife}
	fail := func(step string, err error) (*conn, error) {
		stop()
		if cerr := c.close(); cerr != nil {
			logger.Debug("mcp: closing failed connection", "server", cfg.Name, "error", cerr)
		}
		return nil, fmt.Errorf("mcp server %q: %s: %w", cfg.Name, step, err)
	}

	if err := c.client.Start(life); err != nil {
		return fail("start", err)
	}
	c.client.OnConnectionLost(func(err error) {
		logger.Warn("mcp: connection lost", "server", cfg.Name, "error", err)
		c.broken.Store(true)
	})
	hello := mcpproto.InitializeRequest{}
	hello.Params.ClientInfo = mcpproto.Implementation{Name: clientName, Version: clientVersion}
	if _, err := c.client.Initialize(ctx, hello); err != nil {
		return fail("initialize", err)
	}
	list, err := c.client.ListTools(ctx, mcpproto.ListToolsRequest{})
	if err != nil {
		return fail("list tools", err)
	}
	if !stop() {
		return fail("connect", ctx.Err())
	}
	c.tools = list.Tools
	return c, nil
}

func newTransport(cfg ServerConfig, timeout time.Duration, logger *slog.Logger) (transport.Interface, error) {
	switch cfg.Transport {
	case TransportStdio:
		if cfg.Command == "" {
			return nil, fmt.Errorf("mcp server %q: no command configured", cfg.Name)
		}
		return transport.NewStdioWithOptions(cfg.Command, childEnv(cfg.Env), cfg.Args,
			transport.WithCommandFunc(startChild),
			transport.WithCommandLogger(logger),
			transport.WithCommandStderrWriter(&stderrLog{logger: logger, server: cfg.Name}),
		), nil
	case TransportSSE:
		if err := checkURL(cfg.URL); err != nil {
			return nil, fmt.Errorf("mcp server %q: url %w", cfg.Name, err)
		}
		tr, err := transport.NewSSE(cfg.URL,
			transport.WithHeaders(cfg.Headers),
			transport.WithSSELogger(logger),
			transport.WithEndpointTimeout(timeout),
			// The per-call context is the real bound; this only keeps the
			// transport's own default from cutting long calls short.
			transport.WithResponseTimeout(cfg.callTimeout()+time.Second),
		)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", cfg.Name, err)
		}
		return tr, nil
	case TransportStreamableHTTP:
		if err := checkURL(cfg.URL); err != nil {
			return nil, fmt.Errorf("mcp server %q: url %w", cfg.Name, err)
		}
		tr, err := transport.NewStreamableHTTP(cfg.URL,
			transport.WithHTTPHeaders(cfg.Headers),
			transport.WithHTTPLogger(logger),
		)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", cfg.Name, err)
		}
		return tr, nil
	default:
		return nil, fmt.Errorf("mcp server %q: unknown transport %q", cfg.Name, cfg.Transport)
	}
}

// childEnv is the whole environment of a stdio server: enough to find and run
// the launcher, never the service's own secrets (API keys and the like).
func childEnv(extra map[string]string) []string {
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// startChild builds the child process without a context: the child's
// lifetime is the connection's, which ends in conn.close, not when the
// context that happened to start it is done.
func startChild(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = env
	return cmd, nil
}

// close ends the session; for stdio that waits for the child to exit.
func (c *conn) close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.client.Close()
		c.cancel()
	})
	return c.closeErr
}

// isConnectionError tells a dead transport apart from a tool or protocol
// error and from the caller's own deadline, which leave the session usable.
func isConnectionError(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed)
}

// stderrLog forwards a stdio server's stderr to the debug log, which is
// where a failing server usually explains itself.
type stderrLog struct {
	logger *slog.Logger
	server string
}

const maxStderrChunk = 2048

func (w *stderrLog) Write(p []byte) (int, error) {
	msg := bytes.TrimSpace(p)
	if len(msg) > maxStderrChunk {
		msg = msg[:maxStderrChunk]
	}
	if len(msg) > 0 {
		w.logger.Debug("mcp: server stderr", "server", w.server, "output", string(msg))
	}
	return len(p), nil
}
