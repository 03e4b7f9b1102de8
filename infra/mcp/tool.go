package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	mcpproto "github.com/mark3labs/mcp-go/mcp"
)

// connSource yields the session a call runs on: a registry server's current
// one (reconnecting when it broke) or the fixed session of a one-off run.
type connSource func(ctx context.Context) (*conn, error)

// mcpTool is one MCP tool seen through Eino's InvokableTool.
type mcpTool struct {
	server  string
	name    string // the name the MCP server knows
	info    *schema.ToolInfo
	timeout time.Duration
	source  connSource
	logger  *slog.Logger
}

var _ tool.InvokableTool = (*mcpTool)(nil)

func newTool(cfg ServerConfig, t mcpproto.Tool, source connSource, logger *slog.Logger) (*mcpTool, error) {
	params, err := paramsFromSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: tool %q: %w", cfg.Name, t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &mcpTool{
		server: cfg.Name,
		name:   t.Name,
		info: &schema.ToolInfo{
			Name:        modelToolName(t.Name),
			Desc:        desc,
			Extra:       map[string]any{"mcp_server": cfg.Name, "mcp_tool": t.Name},
			ParamsOneOf: params,
		},
		timeout: cfg.callTimeout(),
		source:  source,
		logger:  logger,
	}, nil
}

// paramsFromSchema carries the server's input schema over unchanged, so the
// model sees the same contract the server validates against.
func paramsFromSchema(in mcpproto.ToolInputSchema) (*schema.ParamsOneOf, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode input schema: %w", err)
	}
	return paramsFromRawSchema(raw)
}

func paramsFromRawSchema(raw []byte) (*schema.ParamsOneOf, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode input schema: %w", err)
	}
	if s.Type == "" && len(s.TypeEnhanced) == 0 {
		s.Type = string(schema.Object)
	}
	if s.Type != string(schema.Object) {
		return nil, fmt.Errorf("input schema type is %q, want object", s.Type)
	}
	return schema.NewParamsOneOfByJSONSchema(&s), nil
}

// modelToolName maps an MCP tool name onto what chat-completion APIs accept
// as a function name (letters, digits, '_' and '-', at most 64).
func modelToolName(name string) string {
	const maxLen = 64
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxLen {
			break
		}
	}
	if b.Len() == 0 {
		return "mcp_tool"
	}
	return b.String()
}

// Info implements tool.BaseTool.
func (t *mcpTool) Info(context.Context) (*schema.ToolInfo, error) {
	info := *t.info
	return &info, nil
}

// InvokableRun implements tool.InvokableTool. Failures the model can react to
// (bad arguments, tool errors, timeouts, an unreachable server) come back as
// text starting with "Error: "; only the caller's own cancellation is a Go
// error, since then nobody is left to read the text.
func (t *mcpTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	args, err := callArguments(argumentsInJSON)
	if err != nil {
		return errorText("invalid arguments for %s: %v", t.name, err), nil
	}
	c, err := t.source(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("mcp tool %q: %w", t.name, ctx.Err())
		}
		return errorText("MCP server %q is unavailable: %v", t.server, err), nil
	}

	callCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req := mcpproto.CallToolRequest{}
	req.Params.Name = t.name
	req.Params.Arguments = args
	start := time.Now()
	res, err := c.client.CallTool(callCtx, req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("mcp tool %q: %w", t.name, ctx.Err())
		}
		t.logger.WarnContext(ctx, "mcp: tool call failed", "server", t.server, "tool", t.name,
			"elapsed", time.Since(start), "error", err)
		// Checked first: the SSE transport reports the deadline as its own
		// timeout error, and a slow tool says nothing about the session.
		if deadline, _ := callCtx.Deadline(); callCtx.Err() != nil || !time.Now().Before(deadline) {
			return errorText("%s timed out after %s", t.name, t.timeout), nil
		}
		if isConnectionError(err) {
			c.broken.Store(true)
		}
		return errorText("%s failed: %v", t.name, err), nil
	}
	t.logger.DebugContext(ctx, "mcp: tool call", "server", t.server, "tool", t.name,
		"elapsed", time.Since(start), "is_error", res.IsError)
	return resultText(res), nil
}

func errorText(format string, a ...any) string {
	return "Error: " + fmt.Sprintf(format, a...)
}

// callArguments checks the model's arguments are a JSON object and passes
// them on byte for byte, so large integers keep their precision.
func callArguments(in string) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace([]byte(in))
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("want a JSON object")
	}
	return json.RawMessage(trimmed), nil
}

// resultText flattens a tools/call result into the text the model reads.
// Binary content is described rather than inlined: base64 only burns tokens.
func resultText(res *mcpproto.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if s := contentText(c); s != "" {
			parts = append(parts, s)
		}
	}
	text := strings.Join(parts, "\n")
	if text == "" && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			text = string(b)
		}
	}
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without details"
		}
		return "Error: " + text
	}
	return text
}

func contentText(c mcpproto.Content) string {
	switch v := c.(type) {
	case mcpproto.TextContent:
		return v.Text
	case *mcpproto.TextContent:
		return v.Text
	case mcpproto.ImageContent:
		return fmt.Sprintf("[image omitted: %s, about %d bytes]", v.MIMEType, len(v.Data)*3/4)
	case mcpproto.AudioContent:
		return fmt.Sprintf("[audio omitted: %s, about %d bytes]", v.MIMEType, len(v.Data)*3/4)
	case mcpproto.ResourceLink:
		return fmt.Sprintf("[resource link: %s <%s>]", v.Name, v.URI)
	case mcpproto.EmbeddedResource:
		switch r := v.Resource.(type) {
		case mcpproto.TextResourceContents:
			return r.Text
		case mcpproto.BlobResourceContents:
			return fmt.Sprintf("[binary resource omitted: %s (%s)]", r.URI, r.MIMEType)
		}
		return "[embedded resource omitted]"
	case nil:
		return ""
	default:
		return "[non-text content omitted]"
	}
}
