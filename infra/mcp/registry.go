package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudwego/eino/components/tool"
)

// ErrRegistryClosed is returned for tool calls made after Registry.Close.
var ErrRegistryClosed = errors.New("mcp registry closed")

// ServerStatus is a point-in-time view of one configured server.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Connected bool   `json:"connected"`
	// Tools are the MCP names of the enabled tools of a connected server.
	Tools       []string  `json:"tools"`
	Error       string    `json:"error,omitempty"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
}

// Registry owns the sessions to the operator-configured MCP servers. Servers
// are connected on first use and the session is shared by every later run; a
// server that fails is skipped and tried again after RetryBackoff.
type Registry struct {
	servers []*server
	logger  *slog.Logger
}

// NewRegistry prepares the servers without connecting to any of them.
func NewRegistry(servers []ServerConfig, logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Registry{logger: logger}
	for _, cfg := range servers {
		r.servers = append(r.servers, &server{
			cfg:            cfg,
			logger:         logger.With("mcp_server", cfg.Name),
			connectTimeout: ConnectTimeout,
			backoff:        RetryBackoff,
		})
	}
	return r
}

// Tools returns the enabled tools of every server configured for agent,
// connecting the ones not yet connected concurrently. Servers that cannot be
// reached are left out; see Status for why.
func (r *Registry) Tools(ctx context.Context, agent string) []tool.InvokableTool {
	var picked []*server
	for _, s := range r.servers {
		if s.cfg.servesAgent(agent) {
			picked = append(picked, s)
		}
	}
	conns := make([]*conn, len(picked))
	var wg sync.WaitGroup
	for i, s := range picked {
		wg.Go(func() {
			c, err := s.acquire(ctx)
			if err != nil {
				s.logger.DebugContext(ctx, "mcp: server skipped", "agent", agent, "error", err)
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()

	var out []tool.InvokableTool
	owner := map[string]string{}
	for i, c := range conns {
		if c == nil {
			continue
		}
		for _, t := range c.built {
			name := t.info.Name
			if prev, dup := owner[name]; dup {
				r.logger.WarnContext(ctx, "mcp: duplicate tool name, keeping the first",
					"tool", name, "kept", prev, "dropped", picked[i].cfg.Name)
				continue
			}
			owner[name] = picked[i].cfg.Name
			out = append(out, t)
		}
	}
	return out
}

// Status reports every configured server in configuration order.
func (r *Registry) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, s.status())
	}
	return out
}

// Close ends every session; stdio servers have exited when it returns.
// Tool calls made afterwards report ErrRegistryClosed.
func (r *Registry) Close() error {
	errs := make([]error, len(r.servers))
	var wg sync.WaitGroup
	for i, s := range r.servers {
		wg.Go(func() { errs[i] = s.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// server is the connection state of one configured server.
type server struct {
	cfg            ServerConfig
	logger         *slog.Logger
	connectTimeout time.Duration
	backoff        time.Duration

	mu          sync.Mutex
	conn        *conn
	dialing     chan struct{} // closed when the dial in flight finishes
	lastErr     error
	lastAttempt time.Time
	closed      bool
}

// acquire returns the live session, replacing a broken one and connecting
// when needed. Concurrent callers share a single dial.
func (s *server) acquire(ctx context.Context) (*conn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrRegistryClosed
		}
		if c := s.conn; c != nil {
			if !c.broken.Load() {
				s.mu.Unlock()
				return c, nil
			}
			s.conn = nil
			s.mu.Unlock()
			s.logger.InfoContext(ctx, "mcp: connection broken, reconnecting")
			if err := c.close(); err != nil {
				s.logger.DebugContext(ctx, "mcp: closing broken connection", "error", err)
			}
			continue
		}
		if ch := s.dialing; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if s.lastErr != nil {
			if retry := s.lastAttempt.Add(s.backoff); time.Now().Before(retry) {
				err := s.lastErr
				s.mu.Unlock()
				return nil, fmt.Errorf("not retrying before %s: %w", retry.Format(time.RFC3339), err)
			}
		}
		ch := make(chan struct{})
		s.dialing = ch
		prevAttempt := s.lastAttempt
		s.lastAttempt = time.Now()
		s.mu.Unlock()

		return s.finishDial(ctx, ch, prevAttempt)
	}
}

func (s *server) finishDial(ctx context.Context, ch chan struct{}, prevAttempt time.Time) (*conn, error) {
	defer close(ch)
	c, err := dial(ctx, s.cfg, s.connectTimeout, s.logger)
	if err == nil {
		c.built = buildTools(s.cfg, c, s.acquire, s.logger)
	}

	s.mu.Lock()
	s.dialing = nil
	if s.closed {
		s.mu.Unlock()
		if c != nil {
			if cerr := c.close(); cerr != nil {
				s.logger.DebugContext(ctx, "mcp: closing connection opened during shutdown", "error", cerr)
			}
		}
		return nil, ErrRegistryClosed
	}
	switch {
	case err == nil:
		s.conn, s.lastErr = c, nil
	case ctx.Err() != nil:
		// The caller gave up; that says nothing about the server.
		s.lastAttempt = prevAttempt
	default:
		s.lastErr = err
	}
	s.mu.Unlock()

	if err != nil {
		if ctx.Err() == nil {
			s.logger.WarnContext(ctx, "mcp: connect failed", "error", err, "retry_after", s.backoff)
		}
		return nil, err
	}
	s.logger.InfoContext(ctx, "mcp: connected", "tools", len(c.built))
	return c, nil
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{
		Name:        s.cfg.Name,
		Transport:   s.cfg.Transport,
		LastAttempt: s.lastAttempt,
		Tools:       []string{},
	}
	if c := s.conn; c != nil && !c.broken.Load() {
		st.Connected = true
		for _, t := range c.built {
			st.Tools = append(st.Tools, t.name)
		}
	}
	if c := s.conn; c != nil && c.broken.Load() {
		st.Error = "connection lost; reconnecting on next use"
	}
	if s.lastErr != nil {
		st.Error = s.lastErr.Error()
	}
	return st
}

func (s *server) close() error {
	s.mu.Lock()
	s.closed = true
	c, ch := s.conn, s.dialing
	s.conn = nil
	s.mu.Unlock()
	if ch != nil {
		// The dialer sees closed and shuts down what it opened.
		<-ch
	}
	if c == nil {
		return nil
	}
	if err := c.close(); err != nil {
		return fmt.Errorf("mcp server %q: close: %w", s.cfg.Name, err)
	}
	return nil
}

// buildTools wraps the enabled tools of c once per session; the wrappers are
// immutable and shared by every run.
func buildTools(cfg ServerConfig, c *conn, source connSource, logger *slog.Logger) []*mcpTool {
	var out []*mcpTool
	for _, t := range c.tools {
		if !cfg.toolEnabled(t.Name) {
			continue
		}
		mt, err := newTool(cfg, t, source, logger)
		if err != nil {
			logger.Warn("mcp: tool skipped", "error", err)
			continue
		}
		out = append(out, mt)
	}
	return out
}
