// Package mcp exposes the tools of Model Context Protocol servers as Eino
// tools: a long-lived Registry for operator-configured servers and one-off
// connections for servers supplied with a single request.
package mcp

import (
	"slices"
	"time"
)

// Transport names accepted in ServerConfig.Transport.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable_http"
)

const (
	// DefaultCallTimeout bounds one tools/call when ServerConfig.Timeout is unset.
	DefaultCallTimeout = 60 * time.Second
	// ConnectTimeout bounds starting a server, the handshake and tools/list.
	ConnectTimeout = 10 * time.Second
	// RetryBackoff is how long a server that failed to connect is left alone.
	RetryBackoff = 30 * time.Second
	// DefaultAgent receives a server's tools when AddToAgents is empty.
	DefaultAgent = "researcher"
)

// ServerConfig describes one MCP server. The field names follow deer-flow's
// mcp_settings so that request bodies and YAML map onto it directly.
type ServerConfig struct {
	Name      string `json:"name" yaml:"name"`
	Transport string `json:"transport" yaml:"transport"` // "stdio" | "sse" | "streamable_http"

	// stdio
	Command string            `json:"command,omitempty" yaml:"command"`
	Args    []string          `json:"args,omitempty" yaml:"args"`
	Env     map[string]string `json:"env,omitempty" yaml:"env"`

	// sse / streamable_http
	URL     string            `json:"url,omitempty" yaml:"url"`
	Headers map[string]string `json:"headers,omitempty" yaml:"headers"`

	// EnabledTools is an allow-list of MCP tool names; empty means all.
	EnabledTools []string `json:"enabled_tools,omitempty" yaml:"enabled_tools"`
	// AddToAgents names the agents that get this server's tools; empty means
	// only the researcher.
	AddToAgents []string `json:"add_to_agents,omitempty" yaml:"add_to_agents"`
	// Timeout bounds each tool call; zero means DefaultCallTimeout. It is not
	// read from JSON, where a bare number would be taken as nanoseconds.
	Timeout time.Duration `json:"-" yaml:"timeout"`
}

func (c ServerConfig) callTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultCallTimeout
}

// servesAgent reports whether agent should receive this server's tools.
func (c ServerConfig) servesAgent(agent string) bool {
	if len(c.AddToAgents) == 0 {
		return agent == DefaultAgent
	}
	return slices.Contains(c.AddToAgents, agent)
}

// toolEnabled reports whether the MCP tool name passes the allow-list.
func (c ServerConfig) toolEnabled(name string) bool {
	return len(c.EnabledTools) == 0 || slices.Contains(c.EnabledTools, name)
}
