package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
)

// ToolName is the name the planner and researcher prompts refer to.
const ToolName = "web_search"

const toolDesc = "Search the web for current information. Returns a JSON array of results: " +
	`pages as {"type":"page","title","url","content","score"} and images as ` +
	`{"type":"image","image_url","image_description"}. Use specific, keyword-rich queries.`

type webSearchTool struct {
	engine     Engine
	maxResults func(ctx context.Context) int
}

// NewTool wraps e as the web_search tool. maxResults supplies the per-run
// result limit; nil (or a non-positive value) means 5.
func NewTool(e Engine, maxResults func(ctx context.Context) int) tool.InvokableTool {
	return &webSearchTool{engine: e, maxResults: maxResults}
}

// Info implements tool.BaseTool.
func (t *webSearchTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{
		Name: ToolName,
		Desc: toolDesc,
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"query": {Type: schema.String, Desc: "The search query.", Required: true},
		}),
	}, nil
}

// InvokableRun implements tool.InvokableTool.
func (t *webSearchTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	if t.engine == nil {
		return "", errors.New("web_search: no search engine configured")
	}
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(argumentsInJSON), &args); err != nil {
		return "", fmt.Errorf("web_search: invalid arguments, want {\"query\": \"...\"}: %w", err)
	}
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return "", fmt.Errorf("web_search: %w", ErrEmptyQuery)
	}
	max := defaultMax
	if t.maxResults != nil {
		max = effectiveMax(t.maxResults(ctx))
	}
	results, err := t.engine.Search(ctx, query, max)
	if err != nil {
		return "", fmt.Errorf("web_search %q: %w", query, err)
	}
	results = Normalize(results, max)
	slog.InfoContext(ctx, "web search", "engine", t.engine.Name(), "query", query, "results", len(results))
	return encodeResults(results)
}

// encodeResults renders results without HTML escaping: the output is read by
// models and the web UI, where \u003c noise only costs tokens.
func encodeResults(results []Result) (string, error) {
	if len(results) == 0 {
		return "[]", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(results); err != nil {
		return "", fmt.Errorf("web_search: encode results: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
