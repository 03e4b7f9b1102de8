package conf

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// String is a one-line summary safe for logs: API keys appear as "***"
// (or "" when unset) and URL credentials and queries are masked.
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server={addr=%s origins=[%s] max_body_bytes=%d request_timeout=%s}",
		c.Addr(), strings.Join(c.Server.AllowedOrigins, ","), c.Server.MaxBodyBytes, c.Server.RequestTimeout)
	fmt.Fprintf(&b, " data_dir=%s", c.DataDir)
	fmt.Fprintf(&b, " llm={basic=%s reasoning=%s code=%s timeout=%s max_retries=%d tool_output_tokens=%d}",
		c.LLM.Basic, c.LLM.Reasoning, c.LLM.Code, c.LLM.Timeout, c.LLM.MaxRetries, c.LLM.ToolOutputTokens)
	fmt.Fprintf(&b, " search=%s", c.Search)
	fmt.Fprintf(&b, " crawl={allow_private=%t timeout=%s max_bytes=%d max_content_chars=%d}",
		c.Crawl.AllowPrivate, c.Crawl.Timeout, c.Crawl.MaxBytes, c.Crawl.MaxContentChars)
	fmt.Fprintf(&b, " python={enabled=%t timeout=%s}", c.Python.Enabled, c.Python.Timeout)
	r := c.Research
	fmt.Fprintf(&b, " research={max_plan_iterations=%d max_step_num=%d max_search_results=%d agent_max_iterations=%d step_timeout=%s run_timeout=%s}",
		r.MaxPlanIterations, r.MaxStepNum, r.MaxSearchResults, r.AgentMaxIterations, r.StepTimeout, r.RunTimeout)
	fmt.Fprintf(&b, " runs={database_url=%s cancel_on_disconnect=%t resume_on_start=%t shutdown_grace=%s retention=%s}",
		redactURL(c.Runs.DatabaseURL), c.Runs.CancelOnDisconnect, c.Runs.ResumeOnStart, c.Runs.ShutdownGrace, c.Runs.Retention)
	names := make([]string, 0, len(c.MCP.Servers))
	for _, m := range c.MCP.Servers {
		names = append(names, m.Name+"("+m.Transport+")")
	}
	fmt.Fprintf(&b, " mcp={servers=[%s] allow_request_servers=%t allowed_commands=[%s]}",
		strings.Join(names, ","), c.MCP.AllowRequestServers, strings.Join(c.MCP.AllowedCommands, ","))
	fmt.Fprintf(&b, " log={level=%s format=%s}", c.Log.Level, c.Log.Format)
	return b.String()
}

// LogValue keeps structured handlers (which would otherwise reflect over
// the struct and print keys) on the redacted form.
func (c *Config) LogValue() slog.Value {
	return slog.StringValue(c.String())
}

// String redacts the key; it also covers fmt printing of enclosing structs.
func (m ModelEndpoint) String() string {
	if m.Model == "" && m.BaseURL == "" && m.APIKey == "" {
		return "{unset}"
	}
	return fmt.Sprintf("{base_url=%s model=%s api_key=%s json_schema=%t}",
		redactURL(m.BaseURL), m.Model, redactSecret(m.APIKey), m.JSONSchema)
}

// String redacts the Tavily key and URL credentials.
func (s SearchConfig) String() string {
	return fmt.Sprintf("{engine=%s max_results=%d tavily_api_key=%s tavily_base_url=%s searx_host=%s ddg_base_url=%s timeout=%s brave_api_key=%s jina_api_key=%s}",
		s.Engine, s.MaxResults, redactSecret(s.TavilyAPIKey), redactURL(s.TavilyBaseURL),
		redactURL(s.SearxHost), redactURL(s.DDGBaseURL), s.Timeout, redactSecret(s.BraveAPIKey), redactSecret(s.JinaAPIKey))
}

func redactSecret(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// redactURL masks userinfo and the query string, where providers
// sometimes accept keys.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid-url>"
	}
	if u.Opaque != "" {
		// Scheme-less "user:pass@host" parses as opaque; show nothing of it.
		return "<opaque-url>"
	}
	hadUser := u.User != nil
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "***"
	}
	u.Fragment = ""
	u.RawFragment = ""
	s := u.String()
	if i := strings.Index(s, "//"); hadUser && i >= 0 {
		s = s[:i+2] + "***@" + s[i+2:]
	}
	return s
}
