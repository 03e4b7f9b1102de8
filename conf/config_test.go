package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg, err := load("", mapEnv(nil), DotenvPath)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Fatalf("load without sources differs from Default():\n got %s\nwant %s", cfg, Default())
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", cfg.Addr(), "127.0.0.1:8000"},
		{"origins", cfg.Server.AllowedOrigins, []string{"http://localhost:3000", "http://127.0.0.1:3000"}},
		{"max body", cfg.Server.MaxBodyBytes, int64(1 << 20)},
		{"data dir", cfg.DataDir, "./data"},
		{"basic url", cfg.LLM.Basic.BaseURL, "http://localhost:11434/v1"},
		{"basic url env", cfg.LLM.Basic.BaseURLEnv, "LLM_BASE_URL"},
		{"basic key", cfg.LLM.Basic.APIKey, ""},
		{"llm timeout", cfg.LLM.Timeout, 120 * time.Second},
		{"retries", cfg.LLM.MaxRetries, 3},
		{"tool tokens", cfg.LLM.ToolOutputTokens, 8000},
		{"engine", cfg.Search.Engine, "duckduckgo"},
		{"search results", cfg.Search.MaxResults, 3},
		{"search timeout", cfg.Search.Timeout, 15 * time.Second},
		{"crawl private", cfg.Crawl.AllowPrivate, false},
		{"crawl timeout", cfg.Crawl.Timeout, 20 * time.Second},
		{"crawl bytes", cfg.Crawl.MaxBytes, int64(5 << 20)},
		{"crawl chars", cfg.Crawl.MaxContentChars, 30000},
		{"python", cfg.Python, PythonConfig{Enabled: false, Timeout: 30 * time.Second}},
		{"research", cfg.Research, ResearchConfig{1, 3, 3, 12, 10 * time.Minute, 30 * time.Minute, nil}},
		{"log", cfg.Log, LogConfig{Level: "info", Format: "text"}},
		{"reasoning falls back", cfg.LLM.Endpoint(RoleReasoning), cfg.LLM.Basic},
		{"code falls back", cfg.LLM.Endpoint(RoleCode), cfg.LLM.Basic},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestLoadYAML(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{
			name: "full override",
			yaml: `
server:
  host: 0.0.0.0
  port: 9090
  allowed_origins: ["https://app.example.com/"]
  max_body_bytes: 2048
  request_timeout: 5s
data_dir: /var/lib/deer
llm:
  basic: {base_url: "https://api.example.com/v1", api_key: k1, model: m1, json_schema: true}
  reasoning: {model: r1}
  timeout: 45s
  max_retries: 0
  tool_output_tokens: 100
search: {engine: SearxNG, max_results: 7, searx_host: "http://127.0.0.1:8888", timeout: 3s}
crawl: {allow_private: true, timeout: 1s, max_bytes: 10, max_content_chars: 20}
python: {enabled: true, timeout: 2s}
research: {max_plan_iterations: 2, max_step_num: 5, max_search_results: 4, agent_max_iterations: 6, step_timeout: 1m, run_timeout: 2m}
log: {level: DEBUG, format: json}
`,
			check: func(t *testing.T, c *Config) {
				want := Default()
				want.Server = ServerConfig{"0.0.0.0", 9090, []string{"https://app.example.com"}, 2048, 5 * time.Second}
				want.DataDir = "/var/lib/deer"
				want.LLM.Basic = ModelEndpoint{"https://api.example.com/v1", "k1", "m1", true, "LLM_BASE_URL"}
				want.LLM.Reasoning = ModelEndpoint{"https://api.example.com/v1", "k1", "r1", false, "LLM_BASE_URL"}
				want.LLM.Timeout, want.LLM.MaxRetries, want.LLM.ToolOutputTokens = 45*time.Second, 0, 100
				want.Search = SearchConfig{Engine: "searxng", MaxResults: 7, SearxHost: "http://127.0.0.1:8888", Timeout: 3 * time.Second, IncludeImages: true}
				want.Crawl = CrawlConfig{AllowPrivate: true, Timeout: time.Second, MaxBytes: 10, MaxContentChars: 20, Reader: "direct"}
				want.Python = PythonConfig{Enabled: true, Timeout: 2 * time.Second}
				want.Research = ResearchConfig{2, 5, 4, 6, time.Minute, 2 * time.Minute, nil}
				want.Log = LogConfig{"debug", "json"}
				if !reflect.DeepEqual(c, want) {
					t.Errorf("got  %s\nwant %s", c, want)
				}
			},
		},
		{
			name: "partial keeps defaults",
			yaml: "server:\n  port: 8123\n",
			check: func(t *testing.T, c *Config) {
				want := Default()
				want.Server.Port = 8123
				if !reflect.DeepEqual(c, want) {
					t.Errorf("got  %s\nwant %s", c, want)
				}
			},
		},
		{
			name:  "empty file",
			yaml:  "",
			check: func(t *testing.T, c *Config) { requireEqual(t, c, Default()) },
		},
		{
			name:  "comments only",
			yaml:  "# nothing here\n",
			check: func(t *testing.T, c *Config) { requireEqual(t, c, Default()) },
		},
		{name: "unknown key", yaml: "server:\n  prot: 1\n", wantErr: "prot"},
		{name: "bad duration", yaml: "llm:\n  timeout: soon\n", wantErr: "parse"},
		{name: "integer duration rejected", yaml: "llm:\n  timeout: 30\n", wantErr: "parse"},
		{name: "wrong type", yaml: "server:\n  port: abc\n", wantErr: "parse"},
		{name: "invalid result", yaml: "search:\n  engine: bing\n", wantErr: "search.engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeFile(t, dir, "config.yaml", tt.yaml)
			cfg, err := load(p, mapEnv(nil), "")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			tt.check(t, cfg)
		})
	}
}

func requireEqual(t *testing.T, got, want *Config) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestLoadPaths(t *testing.T) {
	t.Run("explicit missing path is an error", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
		if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
			t.Fatalf("err = %v, want missing file error", err)
		}
	})
	t.Run("empty path reads conf/config.yaml", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, DefaultPath, "server:\n  port: 8765\n")
		t.Chdir(dir)
		cfg, err := load("", mapEnv(nil), "")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.Port != 8765 {
			t.Fatalf("port = %d, want 8765 from %s", cfg.Server.Port, DefaultPath)
		}
	})
	t.Run("unreadable dotenv is an error", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "c.yaml", "")
		if _, err := load(filepath.Join(dir, "c.yaml"), mapEnv(nil), dir); err == nil {
			t.Fatal("want error reading a directory as .env")
		}
	})
	t.Run("malformed dotenv names file and line", func(t *testing.T) {
		dir := t.TempDir()
		env := writeFile(t, dir, ".env", "OK=1\nsecret-value-without-equals\n")
		_, err := load(writeFile(t, dir, "c.yaml", ""), mapEnv(nil), env)
		if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "secret-value") {
			t.Fatalf("err = %v, want line 2 without the content", err)
		}
	})
}

func TestExampleMatchesDefaults(t *testing.T) {
	cfg, err := load("config.example.yaml", mapEnv(nil), "")
	if err != nil {
		t.Fatalf("load example: %v", err)
	}
	requireEqual(t, cfg, Default())

	data, err := os.ReadFile("config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]bool{"api_key": true, "tavily_api_key": true, "database_url": true, "brave_api_key": true, "jina_api_key": true}
	for _, key := range yamlKeys(reflect.TypeFor[Config](), "") {
		leaf := key[strings.LastIndex(key, ".")+1:]
		if secrets[leaf] {
			if !strings.Contains(string(data), "# "+leaf+":") {
				t.Errorf("example lacks commented secret %s", key)
			}
			continue
		}
		if !hasPath(doc, strings.Split(key, ".")) {
			t.Errorf("example lacks key %s", key)
		}
	}
}

// yamlKeys lists dotted paths of every leaf yaml key in t.
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "-" || tag == "" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, yamlKeys(f.Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

func hasPath(m map[string]any, path []string) bool {
	v, ok := m[path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	sub, ok := v.(map[string]any)
	return ok && hasPath(sub, path[1:])
}
