package conf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEnvOverrides(t *testing.T) {
	yml := `
llm:
  basic: {base_url: "http://yaml.local/v1", api_key: yaml-key, model: yaml-model}
search: {engine: duckduckgo}
`
	tests := []struct {
		name string
		env  map[string]string
		want func(c *Config) // mutates Default()+yaml into the expectation
	}{
		{
			name: "no env keeps yaml",
			want: func(c *Config) {},
		},
		{
			name: "server and data dir",
			env:  map[string]string{"HOST": "::1", "PORT": "8443", "ALLOWED_ORIGINS": " https://a.example , http://b.example:81/ ,,", "DATA_DIR": "/srv/deer"},
			want: func(c *Config) {
				c.Server.Host, c.Server.Port, c.DataDir = "::1", 8443, "/srv/deer"
				c.Server.AllowedOrigins = []string{"https://a.example", "http://b.example:81"}
			},
		},
		{
			name: "openai aliases used when llm vars unset",
			env:  map[string]string{"OPENAI_BASE_URL": "https://openai.example/v1", "OPENAI_API_KEY": "oa-key"},
			want: func(c *Config) {
				c.LLM.Basic.BaseURL, c.LLM.Basic.APIKey, c.LLM.Basic.BaseURLEnv = "https://openai.example/v1", "oa-key", "OPENAI_BASE_URL"
			},
		},
		{
			name: "llm vars beat aliases",
			env: map[string]string{
				"OPENAI_BASE_URL": "https://openai.example/v1", "OPENAI_API_KEY": "oa-key",
				"LLM_BASE_URL": "https://llm.example/v1", "LLM_API_KEY": "llm-key", "LLM_MODEL": "m",
			},
			want: func(c *Config) {
				c.LLM.Basic = ModelEndpoint{"https://llm.example/v1", "llm-key", "m", false, "LLM_BASE_URL"}
			},
		},
		{
			name: "empty llm var counts as unset",
			env:  map[string]string{"LLM_API_KEY": "", "OPENAI_API_KEY": "oa-key", "LLM_BASE_URL": "  "},
			want: func(c *Config) { c.LLM.Basic.APIKey = "oa-key" },
		},
		{
			name: "llm tuning and json schema on every role",
			env:  map[string]string{"LLM_JSON_SCHEMA": "YES", "LLM_TIMEOUT": "90s", "LLM_MAX_RETRIES": "0"},
			want: func(c *Config) {
				c.LLM.Basic.JSONSchema, c.LLM.Reasoning.JSONSchema, c.LLM.Code.JSONSchema = true, true, true
				c.LLM.Timeout, c.LLM.MaxRetries = 90*time.Second, 0
			},
		},
		{
			name: "search",
			env: map[string]string{
				"SEARCH_API": "Tavily", "MAX_SEARCH_RESULTS": "8", "TAVILY_API_KEY": "tv",
				"TAVILY_BASE_URL": "http://127.0.0.1:1/t", "SEARX_HOST": "http://127.0.0.1:2", "DDG_BASE_URL": "http://127.0.0.1:3",
			},
			want: func(c *Config) {
				c.Search.Engine, c.Search.MaxResults, c.Research.MaxSearchResults = "tavily", 8, 8
				c.Search.TavilyAPIKey, c.Search.TavilyBaseURL = "tv", "http://127.0.0.1:1/t"
				c.Search.SearxHost, c.Search.DDGBaseURL = "http://127.0.0.1:2", "http://127.0.0.1:3"
			},
		},
		{
			name: "crawl python log",
			env:  map[string]string{"CRAWL_ALLOW_PRIVATE": "1", "ENABLE_PYTHON_REPL": "True", "PYTHON_TIMEOUT": "1m30s", "LOG_LEVEL": "WARNING", "LOG_FORMAT": "JSON"},
			want: func(c *Config) {
				c.Crawl.AllowPrivate, c.Python.Enabled, c.Python.Timeout = true, true, 90*time.Second
				c.Log = LogConfig{"warn", "json"}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.yaml", yml)
			want, err := load(p, mapEnv(nil), "")
			if err != nil {
				t.Fatal(err)
			}
			tt.want(want)
			got, err := load(p, mapEnv(tt.env), "")
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestRoleFallback(t *testing.T) {
	basic := map[string]string{"LLM_BASE_URL": "https://basic.example/v1", "LLM_API_KEY": "basic-key", "LLM_MODEL": "b"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range basic {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name          string
		env           map[string]string
		yaml          string
		wantReasoning ModelEndpoint
		wantCode      ModelEndpoint
	}{
		{
			name:          "unset roles resolve to basic",
			env:           basic,
			wantReasoning: ModelEndpoint{"https://basic.example/v1", "basic-key", "b", false, "LLM_BASE_URL"},
			wantCode:      ModelEndpoint{"https://basic.example/v1", "basic-key", "b", false, "LLM_BASE_URL"},
		},
		{
			name:          "only model set inherits url and key",
			env:           with(map[string]string{"REASONING_MODEL": "r", "CODE_MODEL": "c"}),
			wantReasoning: ModelEndpoint{"https://basic.example/v1", "basic-key", "r", false, "LLM_BASE_URL"},
			wantCode:      ModelEndpoint{"https://basic.example/v1", "basic-key", "c", false, "LLM_BASE_URL"},
		},
		{
			name:          "inherits alias env name",
			env:           map[string]string{"OPENAI_BASE_URL": "https://oa.example/v1", "OPENAI_API_KEY": "k", "REASONING_MODEL": "r"},
			wantReasoning: ModelEndpoint{"https://oa.example/v1", "k", "r", false, "OPENAI_BASE_URL"},
			wantCode:      ModelEndpoint{"https://oa.example/v1", "k", "qwen2.5", false, "OPENAI_BASE_URL"},
		},
		{
			name:          "own url does not receive basic key",
			env:           with(map[string]string{"REASONING_MODEL": "r", "REASONING_BASE_URL": "https://other.example/v1", "CODE_MODEL": "c", "CODE_BASE_URL": "https://code.example/v1", "CODE_API_KEY": "code-key"}),
			wantReasoning: ModelEndpoint{"https://other.example/v1", "", "r", false, "REASONING_BASE_URL"},
			wantCode:      ModelEndpoint{"https://code.example/v1", "code-key", "c", false, "CODE_BASE_URL"},
		},
		{
			name:          "same url as basic shares key",
			env:           with(map[string]string{"REASONING_MODEL": "r", "REASONING_BASE_URL": "https://basic.example/v1"}),
			wantReasoning: ModelEndpoint{"https://basic.example/v1", "basic-key", "r", false, "REASONING_BASE_URL"},
			wantCode:      ModelEndpoint{"https://basic.example/v1", "basic-key", "b", false, "LLM_BASE_URL"},
		},
		{
			name:          "yaml role with env basic",
			yaml:          "llm:\n  reasoning: {model: deep, json_schema: true}\n",
			env:           basic,
			wantReasoning: ModelEndpoint{"https://basic.example/v1", "basic-key", "deep", true, "LLM_BASE_URL"},
			wantCode:      ModelEndpoint{"https://basic.example/v1", "basic-key", "b", false, "LLM_BASE_URL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			cfg, err := load(p, mapEnv(tt.env), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.LLM.Endpoint(RoleReasoning); got != tt.wantReasoning {
				t.Errorf("reasoning = %#v\nwant %#v", got, tt.wantReasoning)
			}
			if got := cfg.LLM.Endpoint(RoleCode); got != tt.wantCode {
				t.Errorf("code = %#v\nwant %#v", got, tt.wantCode)
			}
			if got := cfg.LLM.Endpoint(RoleBasic); got != cfg.LLM.Basic {
				t.Errorf("basic = %#v, want %#v", got, cfg.LLM.Basic)
			}
		})
	}
}

func TestBadEnvValues(t *testing.T) {
	tests := []struct {
		name, key, value string
	}{
		{"port not a number", "PORT", "eighty"},
		{"port float", "PORT", "80.5"},
		{"timeout without unit", "LLM_TIMEOUT", "30"},
		{"timeout garbage", "LLM_TIMEOUT", "soon"},
		{"python timeout", "PYTHON_TIMEOUT", "1x"},
		{"retries", "LLM_MAX_RETRIES", "three"},
		{"search results", "MAX_SEARCH_RESULTS", "many"},
		{"json schema", "LLM_JSON_SCHEMA", "maybe"},
		{"crawl private", "CRAWL_ALLOW_PRIVATE", "2"},
		{"python repl", "ENABLE_PYTHON_REPL", "on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(writeFile(t, t.TempDir(), "c.yaml", ""), mapEnv(map[string]string{tt.key: tt.value}), "")
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("err = %v, want error naming %s", err, tt.key)
			}
		})
	}

	t.Run("all errors reported together", func(t *testing.T) {
		_, err := load(writeFile(t, t.TempDir(), "c.yaml", ""), mapEnv(map[string]string{"PORT": "x", "LLM_TIMEOUT": "y"}), "")
		if err == nil || !strings.Contains(err.Error(), "PORT") || !strings.Contains(err.Error(), "LLM_TIMEOUT") {
			t.Fatalf("err = %v, want both variables", err)
		}
	})
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in      string
		want    bool
		wantErr bool
	}{
		{"true", true, false}, {"TRUE", true, false}, {"1", true, false}, {"Yes", true, false},
		{"false", false, false}, {"False", false, false}, {"0", false, false}, {"NO", false, false},
		{" yes ", true, false}, {"on", false, true}, {"t", false, true}, {"", false, true},
	}
	for _, tt := range tests {
		got, err := parseBool(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseBool(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
