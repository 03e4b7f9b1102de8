package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cloudwego/eino/components/tool"
)

// ToolsFor connects to a server supplied with a single request and returns
// its enabled tools for agent. The caller must call closer once the run is
// over; it is safe to call more than once. Validate the config with a Policy
// first: ToolsFor trusts it.
func ToolsFor(ctx context.Context, c ServerConfig, agent string, logger *slog.Logger) ([]tool.InvokableTool, func() error, error) {
	noop := func() error { return nil }
	if !c.servesAgent(agent) {
		return nil, noop, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("mcp_server", c.Name)
	cn, err := dial(ctx, c, ConnectTimeout, logger)
	if err != nil {
		return nil, noop, err
	}
	// A per-request session is not worth reviving mid-run: once it breaks
	// the model is told, and the run carries on without it.
	source := func(context.Context) (*conn, error) {
		if cn.broken.Load() {
			return nil, errors.New("connection lost")
		}
		return cn, nil
	}
	built := buildTools(c, cn, source, logger)
	out := make([]tool.InvokableTool, 0, len(built))
	for _, t := range built {
		out = append(out, t)
	}
	closer := func() error {
		if err := cn.close(); err != nil {
			return fmt.Errorf("mcp server %q: close: %w", c.Name, err)
		}
		return nil
	}
	return out, closer, nil
}

// ToolMeta describes one tool of a server as the MCP metadata endpoint
// returns it.
type ToolMeta struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ListTools connects to the server, lists all of its tools (EnabledTools is
// not applied, so a UI can offer the full set) and disconnects.
func ListTools(ctx context.Context, c ServerConfig) ([]ToolMeta, error) {
	logger := slog.Default().With("mcp_server", c.Name)
	cn, err := dial(ctx, c, ConnectTimeout, logger)
	if err != nil {
		return nil, err
	}
	out := make([]ToolMeta, 0, len(cn.tools))
	var encErr error
	for _, t := range cn.tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			encErr = fmt.Errorf("mcp server %q: tool %q: encode input schema: %w", c.Name, t.Name, err)
			break
		}
		out = append(out, ToolMeta{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema})
	}
	if err := cn.close(); err != nil {
		// The listing is complete; a server slow to exit is not the caller's problem.
		logger.WarnContext(ctx, "mcp: close after listing tools", "error", err)
	}
	if encErr != nil {
		return nil, encErr
	}
	return out, nil
}
