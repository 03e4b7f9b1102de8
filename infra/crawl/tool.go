package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
)

// ToolName is the name the agents and the web UI know the crawler by.
const ToolName = "crawl_tool"

// ErrBadArguments is returned when the tool call arguments are unusable.
var ErrBadArguments = errors.New("crawl_tool: bad arguments")

// ToolResult is the JSON document crawl_tool returns; the web UI and the
// citation collector parse exactly these field names.
type ToolResult struct {
	URL            string `json:"url"`
	Title          string `json:"title"`
	CrawledContent string `json:"crawled_content"`
}

type toolArgs struct {
	URL string `json:"url"`
}

type crawlTool struct {
	c *Crawler
}

// NewTool exposes c as the crawl_tool for eino agents.
func NewTool(c *Crawler) tool.InvokableTool {
	return &crawlTool{c: c}
}

func (t *crawlTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{
		Name: ToolName,
		Desc: "Use this to crawl a url and get a readable content in markdown format.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"url": {Type: schema.String, Desc: "The url to crawl.", Required: true},
		}),
	}, nil
}

func (t *crawlTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	var args toolArgs
	if err := json.Unmarshal([]byte(argumentsInJSON), &args); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadArguments, err)
	}
	args.URL = strings.TrimSpace(args.URL)
	if args.URL == "" {
		return "", fmt.Errorf("%w: url is required", ErrBadArguments)
	}
	page, err := t.c.Fetch(ctx, args.URL)
	if err != nil {
		return "", fmt.Errorf("crawl_tool %s: %w", args.URL, err)
	}
	content := page.Markdown
	if page.Truncated {
		// Tell the model the page is incomplete so it does not treat a
		// missing section as absent from the source.
		content += "\n\n[content truncated: the page was longer than the crawl limit]"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // markdown is full of <, > and &; keep it legible
	if err := enc.Encode(ToolResult{URL: page.FinalURL, Title: page.Title, CrawledContent: content}); err != nil {
		return "", fmt.Errorf("crawl_tool: encode result: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
