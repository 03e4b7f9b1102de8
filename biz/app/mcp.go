package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/cloudwego/eino/components/tool"

	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/infra/mcp"
)

// mcpServers converts the operator's configuration.
func mcpServers(cfg *conf.Config) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, 0, len(cfg.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		out = append(out, mcp.ServerConfig{
			Name: s.Name, Transport: s.Transport, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL,
			Headers: s.Headers, EnabledTools: s.EnabledTools, AddToAgents: s.AddToAgents, Timeout: s.Timeout,
		})
	}
	return out
}

// requestMCP handles the MCP servers a client names (deer-flow's mcp_settings and the metadata endpoint), always
// under the operator's policy.
type requestMCP struct {
	policy mcp.Policy
	log    *slog.Logger
}

// parse reads {"servers": {"name": {...}}} and validates every server.
func (r requestMCP) parse(raw json.RawMessage) ([]mcp.ServerConfig, error) {
	var body struct {
		Servers map[string]mcp.ServerConfig `json:"servers"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("must be {\"servers\": {name: server}}: %w", err)
	}
	names := make([]string, 0, len(body.Servers))
	for name := range body.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]mcp.ServerConfig, 0, len(names))
	for _, name := range names {
		c := body.Servers[name]
		if c.Name == "" {
			c.Name = name
		}
		if err := r.policy.Validate(c); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func (r requestMCP) validate(raw json.RawMessage) error {
	_, err := r.parse(raw)
	return err
}

// tools connects, for one step, the servers that list the agent and at least one enabled tool (deer-flow's rule).
func (r requestMCP) tools(ctx context.Context, raw string, agent string) ([]tool.InvokableTool, func() error, error) {
	servers, err := r.parse(json.RawMessage(raw))
	if err != nil {
		return nil, nil, err
	}
	var (
		all     []tool.InvokableTool
		closers []func() error
		errs    []error
	)
	for _, s := range servers {
		if len(s.EnabledTools) == 0 || !slices.Contains(s.AddToAgents, agent) {
			continue
		}
		ts, closeFn, err := mcp.ToolsFor(ctx, s, agent, r.log)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		all = append(all, ts...)
		closers = append(closers, closeFn)
	}
	closeAll := func() error {
		var cerrs []error
		for _, c := range closers {
			cerrs = append(cerrs, c())
		}
		return errors.Join(cerrs...)
	}
	if len(all) == 0 && len(errs) > 0 {
		return nil, nil, errors.Join(append(errs, closeAll())...)
	}
	for _, e := range errs {
		r.log.WarnContext(ctx, "request MCP server unavailable", "err", e)
	}
	return all, closeAll, nil
}

// metadata answers POST /api/mcp/server/metadata: the server description echoed with its tools.
func (r requestMCP) metadata(ctx context.Context, body json.RawMessage) (any, int, error) {
	var c mcp.ServerConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, http.StatusUnprocessableEntity, fmt.Errorf("invalid server description: %w", err)
	}
	if c.Name == "" {
		c.Name = "server"
	}
	if err := r.policy.Validate(c); err != nil {
		return nil, http.StatusUnprocessableEntity, err
	}
	tools, err := mcp.ListTools(ctx, c)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("could not list the server's tools: %w", err)
	}
	return map[string]any{
		"transport": c.Transport, "command": c.Command, "args": c.Args, "url": c.URL, "env": c.Env,
		"headers": c.Headers, "tools": tools,
	}, http.StatusOK, nil
}
