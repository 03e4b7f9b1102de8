package conf

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantErr []string // empty means valid
	}{
		{name: "defaults", mutate: func(c *Config) {}},
		{name: "port zero", mutate: func(c *Config) { c.Server.Port = 0 }, wantErr: []string{"server.port"}},
		{name: "port too big", mutate: func(c *Config) { c.Server.Port = 65536 }, wantErr: []string{"server.port"}},
		{name: "port max ok", mutate: func(c *Config) { c.Server.Port = 65535 }},
		{name: "empty host", mutate: func(c *Config) { c.Server.Host = "" }, wantErr: []string{"server.host"}},
		{name: "origin wildcard ok", mutate: func(c *Config) { c.Server.AllowedOrigins = []string{"*"} }},
		{name: "no origins ok", mutate: func(c *Config) { c.Server.AllowedOrigins = nil }},
		{name: "origin with path", mutate: func(c *Config) { c.Server.AllowedOrigins = []string{"http://a.example/app"} }, wantErr: []string{"allowed_origins"}},
		{name: "origin without scheme", mutate: func(c *Config) { c.Server.AllowedOrigins = []string{"localhost:3000"} }, wantErr: []string{"allowed_origins"}},
		{name: "body limit", mutate: func(c *Config) { c.Server.MaxBodyBytes = 0 }, wantErr: []string{"server.max_body_bytes"}},
		{name: "request timeout", mutate: func(c *Config) { c.Server.RequestTimeout = -time.Second }, wantErr: []string{"server.request_timeout"}},
		{name: "data dir", mutate: func(c *Config) { c.DataDir = " " }, wantErr: []string{"data_dir"}},
		{name: "basic model", mutate: func(c *Config) { c.LLM.Basic.Model = "" }, wantErr: []string{"llm.basic.model"}},
		{name: "basic url missing", mutate: func(c *Config) { c.LLM.Basic.BaseURL = "" }, wantErr: []string{"llm.basic.base_url (LLM_BASE_URL) is required"}},
		{
			name:    "basic url names alias env",
			mutate:  func(c *Config) { c.LLM.Basic.BaseURL, c.LLM.Basic.BaseURLEnv = "ftp://x", "OPENAI_BASE_URL" },
			wantErr: []string{"OPENAI_BASE_URL", "scheme"},
		},
		{name: "basic url unparsable", mutate: func(c *Config) { c.LLM.Basic.BaseURL = "http://a b\x7f" }, wantErr: []string{"not a valid URL"}},
		{name: "basic url no host", mutate: func(c *Config) { c.LLM.Basic.BaseURL = "http:///v1" }, wantErr: []string{"no host"}},
		{name: "reasoning url without model", mutate: func(c *Config) { c.LLM.Reasoning.BaseURL = "http://r.example" }, wantErr: []string{"REASONING_MODEL"}},
		{name: "code key without model", mutate: func(c *Config) { c.LLM.Code.APIKey = "k" }, wantErr: []string{"CODE_MODEL"}},
		{
			name:    "code model bad url",
			mutate:  func(c *Config) { c.LLM.Code = ModelEndpoint{BaseURL: "nope", Model: "c", BaseURLEnv: "CODE_BASE_URL"} },
			wantErr: []string{"llm.code.base_url (CODE_BASE_URL)"},
		},
		{name: "llm timeout", mutate: func(c *Config) { c.LLM.Timeout = 0 }, wantErr: []string{"llm.timeout"}},
		{name: "retries negative", mutate: func(c *Config) { c.LLM.MaxRetries = -1 }, wantErr: []string{"llm.max_retries"}},
		{name: "retries zero ok", mutate: func(c *Config) { c.LLM.MaxRetries = 0 }},
		{name: "tool tokens", mutate: func(c *Config) { c.LLM.ToolOutputTokens = 0 }, wantErr: []string{"tool_output_tokens"}},
		{name: "unknown engine", mutate: func(c *Config) { c.Search.Engine = "bing" }, wantErr: []string{"search.engine"}},
		{name: "tavily without key", mutate: func(c *Config) { c.Search.Engine = EngineTavily }, wantErr: []string{"TAVILY_API_KEY"}},
		{name: "tavily with key", mutate: func(c *Config) { c.Search.Engine, c.Search.TavilyAPIKey = EngineTavily, "k" }},
		{name: "searx without host", mutate: func(c *Config) { c.Search.Engine = EngineSearxNG }, wantErr: []string{"SEARX_HOST"}},
		{name: "searx bad host", mutate: func(c *Config) { c.Search.Engine, c.Search.SearxHost = EngineSearxNG, "searx:8080" }, wantErr: []string{"SEARX_HOST"}},
		{name: "searx ok", mutate: func(c *Config) { c.Search.Engine, c.Search.SearxHost = EngineSearxNG, "http://127.0.0.1:8080" }},
		{name: "bad tavily base", mutate: func(c *Config) { c.Search.TavilyBaseURL = "::" }, wantErr: []string{"TAVILY_BASE_URL"}},
		{name: "bad ddg base", mutate: func(c *Config) { c.Search.DDGBaseURL = "file:///x" }, wantErr: []string{"DDG_BASE_URL"}},
		{name: "search results", mutate: func(c *Config) { c.Search.MaxResults = 0 }, wantErr: []string{"search.max_results"}},
		{name: "search timeout", mutate: func(c *Config) { c.Search.Timeout = 0 }, wantErr: []string{"search.timeout"}},
		{
			name:    "crawl limits",
			mutate:  func(c *Config) { c.Crawl = CrawlConfig{} },
			wantErr: []string{"crawl.timeout", "crawl.max_bytes", "crawl.max_content_chars"},
		},
		{name: "python timeout", mutate: func(c *Config) { c.Python.Timeout = 0 }, wantErr: []string{"python.timeout"}},
		{
			name:   "research limits",
			mutate: func(c *Config) { c.Research = ResearchConfig{} },
			wantErr: []string{"max_plan_iterations", "max_step_num", "research.max_search_results",
				"agent_max_iterations", "step_timeout", "run_timeout"},
		},
		{
			name:    "step longer than run",
			mutate:  func(c *Config) { c.Research.StepTimeout = time.Hour },
			wantErr: []string{"must not exceed research.run_timeout"},
		},
		{name: "log level", mutate: func(c *Config) { c.Log.Level = "verbose" }, wantErr: []string{"log.level"}},
		{name: "log format", mutate: func(c *Config) { c.Log.Format = "xml" }, wantErr: []string{"log.format"}},
		{
			name:    "several problems at once",
			mutate:  func(c *Config) { c.Server.Port, c.Log.Format = -1, "xml" },
			wantErr: []string{"server.port", "log.format"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(c)
			err := c.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestValidateDoesNotEchoURLCredentials(t *testing.T) {
	c := Default()
	c.LLM.Basic.BaseURL = "ftp://user:hunter2@host/v1"
	c.Search.DDGBaseURL = "http://user:hunter2@host/%zz"
	err := c.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks credentials: %v", err)
	}
}

func TestSlogLevel(t *testing.T) {
	tests := []struct{ level, want string }{
		{"debug", "DEBUG"}, {"info", "INFO"}, {"warn", "WARN"}, {"error", "ERROR"}, {"bogus", "INFO"},
	}
	for _, tt := range tests {
		if got := (LogConfig{Level: tt.level}).SlogLevel().String(); got != tt.want {
			t.Errorf("SlogLevel(%q) = %s, want %s", tt.level, got, tt.want)
		}
	}
}

func TestAddr(t *testing.T) {
	tests := []struct {
		host string
		port int
		want string
	}{
		{"127.0.0.1", 8000, "127.0.0.1:8000"},
		{"::1", 9000, "[::1]:9000"},
		{"localhost", 1, "localhost:1"},
	}
	for _, tt := range tests {
		c := Default()
		c.Server.Host, c.Server.Port = tt.host, tt.port
		if got := c.Addr(); got != tt.want {
			t.Errorf("Addr() = %q, want %q", got, tt.want)
		}
	}
}
