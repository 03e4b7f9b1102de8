package conf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// envReader applies variables from lookup and collects every malformed
// value so one run reports all mistakes at once.
type envReader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// get treats empty values as unset: deployment templates commonly export
// blank variables, and those must not wipe file settings.
func (e *envReader) get(name string) (string, bool) {
	v, ok := e.lookup(name)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	return v, v != ""
}

func (e *envReader) fail(name, v, want string, err error) {
	e.errs = append(e.errs, fmt.Errorf("conf: env %s=%q: want %s: %w", name, v, want, err))
}

func (e *envReader) str(name string, dst *string) bool {
	v, ok := e.get(name)
	if ok {
		*dst = v
	}
	return ok
}

func (e *envReader) integer(name string, dst *int) bool {
	v, ok := e.get(name)
	if !ok {
		return false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.fail(name, v, "an integer", err)
		return false
	}
	*dst = n
	return true
}

func (e *envReader) boolean(name string, dst *bool) bool {
	v, ok := e.get(name)
	if !ok {
		return false
	}
	b, err := parseBool(v)
	if err != nil {
		e.fail(name, v, "true/false/1/0/yes/no", err)
		return false
	}
	*dst = b
	return true
}

func (e *envReader) duration(name string, dst *time.Duration) {
	v, ok := e.get(name)
	if !ok {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.fail(name, v, `a duration such as "30s"`, err)
		return
	}
	*dst = d
}

func (e *envReader) list(name string, dst *[]string) {
	v, ok := e.get(name)
	if !ok {
		return
	}
	out := []string{}
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*dst = out
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// applyEnv overlays environment variables onto c.
func (c *Config) applyEnv(lookup func(string) (string, bool)) error {
	e := &envReader{lookup: lookup}

	e.str("HOST", &c.Server.Host)
	e.integer("PORT", &c.Server.Port)
	e.list("ALLOWED_ORIGINS", &c.Server.AllowedOrigins)
	e.str("DATA_DIR", &c.DataDir)

	// OPENAI_* are accepted for compatibility but LLM_* always take precedence.
	switch {
	case e.str("LLM_BASE_URL", &c.LLM.Basic.BaseURL):
		c.LLM.Basic.BaseURLEnv = "LLM_BASE_URL"
	case e.str("OPENAI_BASE_URL", &c.LLM.Basic.BaseURL):
		c.LLM.Basic.BaseURLEnv = "OPENAI_BASE_URL"
	}
	if !e.str("LLM_API_KEY", &c.LLM.Basic.APIKey) {
		e.str("OPENAI_API_KEY", &c.LLM.Basic.APIKey)
	}
	e.str("LLM_MODEL", &c.LLM.Basic.Model)

	e.str("REASONING_MODEL", &c.LLM.Reasoning.Model)
	if e.str("REASONING_BASE_URL", &c.LLM.Reasoning.BaseURL) {
		c.LLM.Reasoning.BaseURLEnv = "REASONING_BASE_URL"
	}
	e.str("REASONING_API_KEY", &c.LLM.Reasoning.APIKey)

	e.str("CODE_MODEL", &c.LLM.Code.Model)
	if e.str("CODE_BASE_URL", &c.LLM.Code.BaseURL) {
		c.LLM.Code.BaseURLEnv = "CODE_BASE_URL"
	}
	e.str("CODE_API_KEY", &c.LLM.Code.APIKey)

	// One switch for every role: the flag describes the serving stack,
	// which roles usually share.
	if js := false; e.boolean("LLM_JSON_SCHEMA", &js) {
		c.LLM.Basic.JSONSchema = js
		c.LLM.Reasoning.JSONSchema = js
		c.LLM.Code.JSONSchema = js
	}
	e.duration("LLM_TIMEOUT", &c.LLM.Timeout)
	e.integer("LLM_MAX_RETRIES", &c.LLM.MaxRetries)

	e.str("SEARCH_API", &c.Search.Engine)
	if n := 0; e.integer("MAX_SEARCH_RESULTS", &n) {
		c.Search.MaxResults = n
		c.Research.MaxSearchResults = n
	}
	e.str("TAVILY_API_KEY", &c.Search.TavilyAPIKey)
	e.str("TAVILY_BASE_URL", &c.Search.TavilyBaseURL)
	e.str("SEARX_HOST", &c.Search.SearxHost)
	e.str("DDG_BASE_URL", &c.Search.DDGBaseURL)
	e.str("BRAVE_SEARCH_API_KEY", &c.Search.BraveAPIKey)
	e.str("BRAVE_SEARCH_BASE_URL", &c.Search.BraveBaseURL)
	e.str("WIKIPEDIA_BASE_URL", &c.Search.WikipediaBaseURL)
	e.str("ARXIV_BASE_URL", &c.Search.ArxivBaseURL)
	e.str("JINA_API_KEY", &c.Search.JinaAPIKey)
	e.str("JINA_BASE_URL", &c.Search.JinaBaseURL)
	e.list("TAVILY_INCLUDE_DOMAINS", &c.Search.IncludeDomains)
	e.list("TAVILY_EXCLUDE_DOMAINS", &c.Search.ExcludeDomains)
	e.boolean("TAVILY_INCLUDE_IMAGES", &c.Search.IncludeImages)
	e.boolean("TAVILY_INCLUDE_RAW_CONTENT", &c.Search.IncludeRawContent)
	e.str("CRAWL_READER", &c.Crawl.Reader)
	e.str("JINA_READER_BASE_URL", &c.Crawl.JinaReaderBaseURL)

	e.boolean("CRAWL_ALLOW_PRIVATE", &c.Crawl.AllowPrivate)
	e.boolean("ENABLE_PYTHON_REPL", &c.Python.Enabled)
	e.duration("PYTHON_TIMEOUT", &c.Python.Timeout)
	e.str("PYTHON_BIN", &c.Python.Interpreter)
	e.str("DATABASE_URL", &c.Runs.DatabaseURL)
	e.boolean("ENABLE_MCP_SERVER_CONFIGURATION", &c.MCP.AllowRequestServers)
	e.list("MCP_ALLOWED_COMMANDS", &c.MCP.AllowedCommands)
	e.list("INTERRUPT_BEFORE_TOOLS", &c.Research.InterruptBeforeTools)
	e.boolean("CANCEL_ON_DISCONNECT", &c.Runs.CancelOnDisconnect)
	e.boolean("RESUME_ON_START", &c.Runs.ResumeOnStart)
	e.duration("SHUTDOWN_GRACE", &c.Runs.ShutdownGrace)
	e.duration("RETENTION", &c.Runs.Retention)
	e.str("LOG_LEVEL", &c.Log.Level)
	e.str("LOG_FORMAT", &c.Log.Format)

	return errors.Join(e.errs...)
}
