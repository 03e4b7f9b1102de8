package conf

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Validate reports every problem found, joined into one error.
func (c *Config) Validate() error {
	v := &validator{}

	s := c.Server
	if s.Host == "" {
		v.add("server.host (HOST) must not be empty; use 0.0.0.0 to listen on all interfaces")
	}
	if s.Port < 1 || s.Port > 65535 {
		v.add("server.port (PORT) must be in 1..65535, got %d", s.Port)
	}
	for _, o := range s.AllowedOrigins {
		if err := checkOrigin(o); err != nil {
			v.add("server.allowed_origins (ALLOWED_ORIGINS): %q: %v", o, err)
		}
	}
	positive(v, "server.max_body_bytes", s.MaxBodyBytes)
	v.positiveDur("server.request_timeout", s.RequestTimeout)
	if u := c.Runs.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		v.add("runs.database_url (DATABASE_URL) must be a postgres:// URL")
	}
	if c.Runs.ShutdownGrace < 0 || c.Runs.Retention < 0 {
		v.add("runs.shutdown_grace and runs.retention must not be negative")
	}
	if strings.TrimSpace(c.DataDir) == "" {
		v.add("data_dir (DATA_DIR) must not be empty")
	}

	l := c.LLM
	if l.Basic.Model == "" {
		v.add("llm.basic.model (LLM_MODEL) must not be empty")
	}
	v.url(fmt.Sprintf("llm.basic.base_url (%s)", l.Basic.BaseURLEnv), l.Basic.BaseURL, true)
	v.role("reasoning", "REASONING", l.Reasoning)
	v.role("code", "CODE", l.Code)
	v.positiveDur("llm.timeout (LLM_TIMEOUT)", l.Timeout)
	if l.MaxRetries < 0 {
		v.add("llm.max_retries (LLM_MAX_RETRIES) must not be negative, got %d", l.MaxRetries)
	}
	positive(v, "llm.tool_output_tokens", l.ToolOutputTokens)

	sr := c.Search
	switch sr.Engine {
	case EngineDuckDuckGo, EngineSearxNG, EngineTavily, EngineBrave, EngineWikipedia, EngineArxiv, EngineJina:
	default:
		v.add("search.engine (SEARCH_API) must be one of duckduckgo, tavily, searxng, brave, wikipedia, arxiv, jina; got %q", sr.Engine)
	}
	if sr.Engine == EngineBrave && sr.BraveAPIKey == "" {
		v.add("search.brave_api_key (BRAVE_SEARCH_API_KEY) is required when search.engine is brave")
	}
	if sr.Engine == EngineJina && sr.JinaAPIKey == "" {
		v.add("search.jina_api_key (JINA_API_KEY) is required when search.engine is jina")
	}
	for _, u := range []struct{ name, val string }{
		{"search.brave_base_url (BRAVE_SEARCH_BASE_URL)", sr.BraveBaseURL},
		{"search.wikipedia_base_url (WIKIPEDIA_BASE_URL)", sr.WikipediaBaseURL},
		{"search.arxiv_base_url (ARXIV_BASE_URL)", sr.ArxivBaseURL},
		{"search.jina_base_url (JINA_BASE_URL)", sr.JinaBaseURL},
		{"crawl.jina_reader_base_url (JINA_READER_BASE_URL)", c.Crawl.JinaReaderBaseURL},
	} {
		v.url(u.name, u.val, false)
	}
	if r := c.Crawl.Reader; r != "" && r != "direct" && r != "jina" {
		v.add("crawl.reader (CRAWL_READER) must be direct or jina; got %q", r)
	}
	if sr.Engine == EngineTavily && sr.TavilyAPIKey == "" {
		v.add("search.tavily_api_key (TAVILY_API_KEY) is required when search.engine is tavily")
	}
	v.url("search.searx_host (SEARX_HOST)", sr.SearxHost, sr.Engine == EngineSearxNG)
	v.url("search.tavily_base_url (TAVILY_BASE_URL)", sr.TavilyBaseURL, false)
	v.url("search.ddg_base_url (DDG_BASE_URL)", sr.DDGBaseURL, false)
	positive(v, "search.max_results (MAX_SEARCH_RESULTS)", sr.MaxResults)
	v.positiveDur("search.timeout", sr.Timeout)

	v.positiveDur("crawl.timeout", c.Crawl.Timeout)
	positive(v, "crawl.max_bytes", c.Crawl.MaxBytes)
	positive(v, "crawl.max_content_chars", c.Crawl.MaxContentChars)

	v.positiveDur("python.timeout (PYTHON_TIMEOUT)", c.Python.Timeout)

	r := c.Research
	positive(v, "research.max_plan_iterations", r.MaxPlanIterations)
	positive(v, "research.max_step_num", r.MaxStepNum)
	positive(v, "research.max_search_results (MAX_SEARCH_RESULTS)", r.MaxSearchResults)
	positive(v, "research.agent_max_iterations", r.AgentMaxIterations)
	v.positiveDur("research.step_timeout", r.StepTimeout)
	v.positiveDur("research.run_timeout", r.RunTimeout)
	if r.StepTimeout > r.RunTimeout {
		v.add("research.step_timeout (%s) must not exceed research.run_timeout (%s)", r.StepTimeout, r.RunTimeout)
	}

	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "warning", "error":
	default:
		v.add("log.level (LOG_LEVEL) must be debug, info, warn or error; got %q", c.Log.Level)
	}
	switch strings.ToLower(c.Log.Format) {
	case "text", "json":
	default:
		v.add("log.format (LOG_FORMAT) must be text or json; got %q", c.Log.Format)
	}

	if len(v.errs) == 0 {
		return nil
	}
	return fmt.Errorf("conf: invalid configuration: %w", errors.Join(v.errs...))
}

type validator struct{ errs []error }

func (v *validator) add(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func positive[T ~int | ~int64](v *validator, name string, n T) {
	if n <= 0 {
		v.add("%s must be positive, got %d", name, n)
	}
}

func (v *validator) positiveDur(name string, d time.Duration) {
	if d <= 0 {
		v.add("%s must be a positive duration, got %s", name, d)
	}
}

// url checks an http(s) URL without echoing it, since base URLs may embed
// credentials.
func (v *validator) url(name, raw string, required bool) {
	if raw == "" {
		if required {
			v.add("%s is required", name)
		}
		return
	}
	if err := checkHTTPURL(raw); err != nil {
		v.add("%s: %v", name, err)
	}
}

func (v *validator) role(name, envPrefix string, ep ModelEndpoint) {
	if ep.Model == "" {
		if ep.BaseURL != "" || ep.APIKey != "" {
			v.add("llm.%s has base_url or api_key but no model (%s_MODEL)", name, envPrefix)
		}
		return
	}
	v.url(fmt.Sprintf("llm.%s.base_url (%s)", name, ep.BaseURLEnv), ep.BaseURL, true)
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a valid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("URL scheme must be http or https")
	}
	if u.Host == "" {
		return errors.New("URL has no host")
	}
	return nil
}

// checkOrigin accepts "*" or a bare scheme://host[:port] as browsers send it.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	if err := checkHTTPURL(o); err != nil {
		return err
	}
	u, err := url.Parse(o)
	if err != nil {
		return fmt.Errorf("not a valid URL: %w", err)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("origin must be scheme://host[:port] only")
	}
	return nil
}
