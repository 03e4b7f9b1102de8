// Package conf holds the typed configuration of the deer-go server.
//
// Values are layered, later layers winning: built-in defaults, the YAML file
// (conf/config.yaml unless a path is given), a .env file in the working
// directory, and finally the process environment. A .env entry never
// overrides a variable that is already set in the real environment.
package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	// DefaultPath is the YAML file read when Load is given an empty path.
	DefaultPath = "conf/config.yaml"
	// DotenvPath is the optional KEY=VALUE file read from the working directory.
	DotenvPath = ".env"
)

// Search engine names accepted in Search.Engine.
const (
	EngineDuckDuckGo = "duckduckgo"
	EngineTavily     = "tavily"
	EngineSearxNG    = "searxng"
	EngineBrave      = "brave"
	EngineWikipedia  = "wikipedia"
	EngineArxiv      = "arxiv"
	EngineJina       = "jina"
)

// Role selects one of the configured chat model endpoints.
type Role string

// Model roles; Reasoning and Code fall back to Basic when not configured.
const (
	RoleBasic     Role = "basic"
	RoleReasoning Role = "reasoning"
	RoleCode      Role = "code"
)

// Config is the complete server configuration.
type Config struct {
	Server   ServerConfig   `yaml:"server"`
	DataDir  string         `yaml:"data_dir"`
	LLM      LLMConfig      `yaml:"llm"`
	Search   SearchConfig   `yaml:"search"`
	Crawl    CrawlConfig    `yaml:"crawl"`
	Python   PythonConfig   `yaml:"python"`
	Research ResearchConfig `yaml:"research"`
	Runs     RunsConfig     `yaml:"runs"`
	MCP      MCPConfig      `yaml:"mcp"`
	Log      LogConfig      `yaml:"log"`
}

// MCPConfig lists the operator's MCP servers and what clients may configure themselves.
type MCPConfig struct {
	Servers []MCPServer `yaml:"servers"`
	// AllowRequestServers accepts per-request mcp_settings and POST /api/mcp/server/metadata.
	AllowRequestServers bool `yaml:"allow_request_servers"`
	// AllowedCommands limits the stdio commands clients may name (names or absolute paths).
	AllowedCommands []string `yaml:"allowed_commands"`
}

// MCPServer is one MCP server the operator configured.
type MCPServer struct {
	Name         string            `yaml:"name"`
	Transport    string            `yaml:"transport"` // stdio | sse | streamable_http
	Command      string            `yaml:"command"`
	Args         []string          `yaml:"args"`
	Env          map[string]string `yaml:"env"`
	URL          string            `yaml:"url"`
	Headers      map[string]string `yaml:"headers"`
	EnabledTools []string          `yaml:"enabled_tools"`
	AddToAgents  []string          `yaml:"add_to_agents"`
	Timeout      time.Duration     `yaml:"timeout"`
}

// RunsConfig controls where runs are stored and how they outlive connections and restarts.
type RunsConfig struct {
	// DatabaseURL selects PostgreSQL (postgres://…); empty means SQLite under DataDir.
	DatabaseURL string `yaml:"database_url"`
	// CancelOnDisconnect stops a run when the client that started it goes away.
	CancelOnDisconnect bool `yaml:"cancel_on_disconnect"`
	// ResumeOnStart resumes runs cut off by a restart as soon as the server starts.
	ResumeOnStart bool `yaml:"resume_on_start"`
	// ShutdownGrace is how long a shutdown lets runs reach their next checkpoint.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// Retention deletes threads not updated for this long; 0 keeps them forever.
	Retention time.Duration `yaml:"retention"`
}

// ServerConfig controls the HTTP listener.
type ServerConfig struct {
	Host           string   `yaml:"host"`
	Port           int      `yaml:"port"`
	AllowedOrigins []string `yaml:"allowed_origins"`
	MaxBodyBytes   int64    `yaml:"max_body_bytes"`
	// RequestTimeout bounds non-streaming handlers; streamed research runs
	// are bounded by Research.RunTimeout instead.
	RequestTimeout time.Duration `yaml:"request_timeout"`
}

// ModelEndpoint describes one OpenAI-compatible chat completion endpoint.
type ModelEndpoint struct {
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	Model   string `yaml:"model"`
	// JSONSchema reports that the endpoint honours response_format json_schema.
	JSONSchema bool `yaml:"json_schema"`
	// BaseURLEnv names the environment variable that overrides BaseURL, so
	// connection errors can tell the operator what to change.
	BaseURLEnv string `yaml:"-"`
}

// LLMConfig groups the model endpoints and shared client limits.
type LLMConfig struct {
	Basic     ModelEndpoint `yaml:"basic"`
	Reasoning ModelEndpoint `yaml:"reasoning"`
	Code      ModelEndpoint `yaml:"code"`

	Timeout          time.Duration `yaml:"timeout"`
	MaxRetries       int           `yaml:"max_retries"`
	ToolOutputTokens int           `yaml:"tool_output_tokens"`
}

// SearchConfig selects and configures the web search backend.
type SearchConfig struct {
	Engine       string `yaml:"engine"`
	MaxResults   int    `yaml:"max_results"`
	TavilyAPIKey string `yaml:"tavily_api_key"`
	// Empty base URLs mean the search client's built-in public endpoint.
	TavilyBaseURL string        `yaml:"tavily_base_url"`
	SearxHost     string        `yaml:"searx_host"`
	DDGBaseURL    string        `yaml:"ddg_base_url"`
	Timeout       time.Duration `yaml:"timeout"`

	BraveAPIKey      string `yaml:"brave_api_key"`
	BraveBaseURL     string `yaml:"brave_base_url"`
	WikipediaBaseURL string `yaml:"wikipedia_base_url"`
	ArxivBaseURL     string `yaml:"arxiv_base_url"`
	// JinaAPIKey serves both Jina search and the Jina reader.
	JinaAPIKey  string `yaml:"jina_api_key"`
	JinaBaseURL string `yaml:"jina_base_url"`
	// Tavily refinements.
	IncludeDomains    []string `yaml:"include_domains"`
	ExcludeDomains    []string `yaml:"exclude_domains"`
	IncludeImages     bool     `yaml:"include_images"`
	IncludeRawContent bool     `yaml:"include_raw_content"`
}

// CrawlConfig limits page fetching.
type CrawlConfig struct {
	// AllowPrivate permits fetching loopback and private addresses; off by
	// default so user-supplied URLs cannot reach internal services.
	AllowPrivate    bool          `yaml:"allow_private"`
	Timeout         time.Duration `yaml:"timeout"`
	MaxBytes        int64         `yaml:"max_bytes"`
	MaxContentChars int           `yaml:"max_content_chars"`
	// Reader is "direct" (fetch pages ourselves) or "jina" (the Jina reader API, key search.jina_api_key).
	Reader            string `yaml:"reader"`
	JinaReaderBaseURL string `yaml:"jina_reader_base_url"`
}

// PythonConfig gates the Python execution tool.
type PythonConfig struct {
	Enabled bool          `yaml:"enabled"`
	Timeout time.Duration `yaml:"timeout"`
	// Interpreter is the python3 to run; empty prefers the system /usr/bin/python3 (which the sandbox's unprivileged
	// user can execute) and falls back to python3 on PATH.
	Interpreter string `yaml:"interpreter"`
}

// ResearchConfig holds workflow defaults and limits.
type ResearchConfig struct {
	MaxPlanIterations int `yaml:"max_plan_iterations"`
	MaxStepNum        int `yaml:"max_step_num"`
	MaxSearchResults  int `yaml:"max_search_results"`
	// AgentMaxIterations caps ReAct turns within a single plan step.
	AgentMaxIterations int           `yaml:"agent_max_iterations"`
	StepTimeout        time.Duration `yaml:"step_timeout"`
	RunTimeout         time.Duration `yaml:"run_timeout"`
	// InterruptBeforeTools are tool names whose calls always wait for the user's approval.
	InterruptBeforeTools []string `yaml:"interrupt_before_tools"`
}

// LogConfig selects the slog handler.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Default returns the built-in configuration.
func Default() *Config {
	return &Config{
		Server: ServerConfig{
			Host:           "127.0.0.1",
			Port:           8000,
			AllowedOrigins: []string{"http://localhost:3000", "http://127.0.0.1:3000"},
			MaxBodyBytes:   1 << 20,
			RequestTimeout: 60 * time.Second,
		},
		DataDir: "./data",
		LLM: LLMConfig{
			Basic: ModelEndpoint{
				BaseURL:    "http://localhost:11434/v1",
				Model:      "qwen2.5",
				BaseURLEnv: "LLM_BASE_URL",
			},
			Reasoning:        ModelEndpoint{BaseURLEnv: "REASONING_BASE_URL"},
			Code:             ModelEndpoint{BaseURLEnv: "CODE_BASE_URL"},
			Timeout:          120 * time.Second,
			MaxRetries:       3,
			ToolOutputTokens: 8000,
		},
		Search: SearchConfig{
			Engine:        EngineDuckDuckGo,
			MaxResults:    3,
			Timeout:       15 * time.Second,
			IncludeImages: true,
		},
		Crawl: CrawlConfig{
			Timeout:         20 * time.Second,
			MaxBytes:        5 << 20,
			MaxContentChars: 30000,
			Reader:          "direct",
		},
		Python: PythonConfig{Timeout: 30 * time.Second},
		Research: ResearchConfig{
			MaxPlanIterations:  1,
			MaxStepNum:         3,
			MaxSearchResults:   3,
			AgentMaxIterations: 12,
			StepTimeout:        10 * time.Minute,
			RunTimeout:         30 * time.Minute,
		},
		Runs: RunsConfig{ShutdownGrace: 10 * time.Second},
		MCP:  MCPConfig{AllowedCommands: []string{"node", "npx", "python3", "uvx", "uv", "deno", "bun"}},
		Log:  LogConfig{Level: "info", Format: "text"},
	}
}

// Load builds and validates the configuration. An empty path reads
// DefaultPath when that file exists; an explicit path must exist.
func Load(path string) (*Config, error) {
	return load(path, os.LookupEnv, DotenvPath)
}

// load is Load with the environment and .env location injected.
func load(path string, lookup func(string) (string, bool), dotenvPath string) (*Config, error) {
	cfg := Default()

	optional := path == ""
	if optional {
		path = DefaultPath
	}
	if err := cfg.readYAML(path, optional); err != nil {
		return nil, err
	}

	dotenv, err := readDotenv(dotenvPath)
	if err != nil {
		return nil, err
	}
	env := func(name string) (string, bool) {
		if v, ok := lookup(name); ok {
			return v, true
		}
		v, ok := dotenv[name]
		return v, ok
	}
	if err := cfg.applyEnv(env); err != nil {
		return nil, err
	}

	cfg.normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *Config) readYAML(path string, optional bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("conf: read %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// Unknown keys are almost always typos that would otherwise be silently ignored.
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("conf: parse %s: %w", path, err)
	}
	return nil
}

func readDotenv(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("conf: read %s: %w", path, err)
	}
	vars, err := parseDotenv(data)
	if err != nil {
		return nil, fmt.Errorf("conf: parse %s: %w", path, err)
	}
	return vars, nil
}

// normalize canonicalises enum spellings and resolves role fallbacks once
// every layer has been applied, so YAML and env configure them alike.
func (c *Config) normalize() {
	c.Search.Engine = strings.ToLower(strings.TrimSpace(c.Search.Engine))
	c.Log.Level = strings.ToLower(strings.TrimSpace(c.Log.Level))
	c.Log.Format = strings.ToLower(strings.TrimSpace(c.Log.Format))
	// Browsers send origins without a trailing slash; keep matching exact.
	for i, o := range c.Server.AllowedOrigins {
		c.Server.AllowedOrigins[i] = strings.TrimRight(strings.TrimSpace(o), "/")
	}
	if c.Log.Level == "warning" {
		c.Log.Level = "warn"
	}
	if c.LLM.Basic.BaseURLEnv == "" {
		c.LLM.Basic.BaseURLEnv = "LLM_BASE_URL"
	}
	inherit(&c.LLM.Reasoning, c.LLM.Basic, "REASONING_BASE_URL")
	inherit(&c.LLM.Code, c.LLM.Basic, "CODE_BASE_URL")
}

// inherit fills a configured role's missing base URL and key from basic.
// The key is only shared when the role talks to the same base URL, so a
// secret for one provider is never sent to another.
func inherit(role *ModelEndpoint, basic ModelEndpoint, envName string) {
	if role.BaseURLEnv == "" {
		role.BaseURLEnv = envName
	}
	if role.Model == "" {
		return
	}
	if role.BaseURL == "" {
		role.BaseURL = basic.BaseURL
		role.BaseURLEnv = basic.BaseURLEnv
	}
	if role.APIKey == "" && role.BaseURL == basic.BaseURL {
		role.APIKey = basic.APIKey
	}
}

// Endpoint returns the endpoint for role, falling back to Basic when the
// role has no model of its own.
func (l LLMConfig) Endpoint(role Role) ModelEndpoint {
	var ep ModelEndpoint
	switch role {
	case RoleReasoning:
		ep = l.Reasoning
	case RoleCode:
		ep = l.Code
	default:
		return l.Basic
	}
	if ep.Model == "" {
		return l.Basic
	}
	return ep
}

// Addr is the listen address in host:port form.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.Server.Host, strconv.Itoa(c.Server.Port))
}

// SlogLevel maps Level to a slog level; unknown values mean info.
func (l LogConfig) SlogLevel() slog.Level {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(l.Level)); err != nil {
		return slog.LevelInfo
	}
	return lvl
}
