// Package app assembles the service from its configuration: infrastructure, the compiled research graph, the run
// manager and the HTTP server. main and the end-to-end tests build it the same way.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/eino-contrib/jsonschema"

	"github.com/deer-go/deer-go/biz/graph"
	"github.com/deer-go/deer-go/biz/handler"
	dm "github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/run"
	"github.com/deer-go/deer-go/conf"
	"github.com/deer-go/deer-go/infra/crawl"
	"github.com/deer-go/deer-go/infra/llm"
	"github.com/deer-go/deer-go/infra/mcp"
	"github.com/deer-go/deer-go/infra/sandbox"
	"github.com/deer-go/deer-go/infra/search"
	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/infra/store/postgres"
	"github.com/deer-go/deer-go/infra/store/sqlite"
	"github.com/deer-go/deer-go/prompts"
)

// App is the assembled service.
type App struct {
	Cfg      *conf.Config
	Graph    *graph.Graph
	Runs     *run.Manager
	Handlers *handler.Handlers
	Logger   *slog.Logger
	exitWait time.Duration
	store    store.Store
	mcp      *mcp.Registry

	janitorStop, janitorDone chan struct{}
	closeOnce                sync.Once
	closeErr                 error
}

// Options adjust assembly for tests and embedding.
type Options struct {
	Logger    *slog.Logger
	Heartbeat time.Duration
	// ExitWait is how long a shutdown waits for open requests; default 5s.
	ExitWait time.Duration
	// CompactAfter overrides how long after a run its event log is compacted (tests).
	CompactAfter time.Duration
}

// New builds the service from cfg. It does no network I/O: unreachable endpoints surface on first use.
func New(ctx context.Context, cfg *conf.Config, o Options) (*App, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	provider, err := llm.New(ctx, llm.Options{
		Endpoints: map[llm.Role]llm.Endpoint{
			llm.RoleBasic:     endpoint(cfg.LLM.Basic),
			llm.RoleReasoning: endpoint(cfg.LLM.Reasoning),
			llm.RoleCode:      endpoint(cfg.LLM.Code),
		},
		Timeout:    cfg.LLM.Timeout,
		MaxRetries: cfg.LLM.MaxRetries,
		Logger:     log,
	})
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	prm, err := prompts.Load()
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cps := run.NewCheckpoints(st)
	mdl := newModels(provider)
	deps := graph.Deps{
		Models:             mdl,
		Prompts:            prm,
		Store:              cps,
		Logger:             log,
		AgentMaxIterations: cfg.Research.AgentMaxIterations,
		StepTimeout:        cfg.Research.StepTimeout,
		ToolOutputTokens:   cfg.LLM.ToolOutputTokens,
		TrimTokens:         llm.TrimToTokens,
	}
	engine, err := search.New(search.Options{
		Engine: cfg.Search.Engine, TavilyAPIKey: cfg.Search.TavilyAPIKey, TavilyBaseURL: cfg.Search.TavilyBaseURL,
		SearxHost: cfg.Search.SearxHost, DDGBaseURL: cfg.Search.DDGBaseURL, Timeout: cfg.Search.Timeout,
		BraveAPIKey: cfg.Search.BraveAPIKey, BraveBaseURL: cfg.Search.BraveBaseURL,
		WikipediaBaseURL: cfg.Search.WikipediaBaseURL, ArxivBaseURL: cfg.Search.ArxivBaseURL,
		JinaAPIKey: cfg.Search.JinaAPIKey, JinaBaseURL: cfg.Search.JinaBaseURL,
		IncludeDomains: cfg.Search.IncludeDomains, ExcludeDomains: cfg.Search.ExcludeDomains,
		DisableImages: !cfg.Search.IncludeImages, IncludeRawContent: cfg.Search.IncludeRawContent,
	})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	deps.Search = engine
	deps.WebSearchTool = func(max int) tool.InvokableTool {
		return search.NewTool(engine, func(context.Context) int { return max })
	}
	crawlOpts := crawl.Options{
		AllowPrivate: cfg.Crawl.AllowPrivate, Timeout: cfg.Crawl.Timeout, MaxBytes: cfg.Crawl.MaxBytes,
		MaxContentChars: cfg.Crawl.MaxContentChars, UserAgent: "deer-go/1.0 (+research crawler)",
		Reader: cfg.Crawl.Reader, JinaBaseURL: cfg.Crawl.JinaReaderBaseURL, JinaAPIKey: cfg.Search.JinaAPIKey,
	}
	if err := crawlOpts.Validate(); err != nil {
		return nil, fmt.Errorf("crawl: %w", err)
	}
	crawler := crawl.New(crawlOpts)
	deps.CrawlTool = func(cache *crawl.Cache) tool.InvokableTool {
		if cache == nil {
			return crawl.NewTool(crawler)
		}
		return crawl.NewTool(crawler.WithCache(cache))
	}
	if cfg.Python.Enabled {
		interp := cfg.Python.Interpreter
		if interp == "" {
			if _, err := os.Stat("/usr/bin/python3"); err == nil {
				interp = "/usr/bin/python3"
			}
		}
		runner, err := sandbox.New(sandbox.Options{Enabled: true, Timeout: cfg.Python.Timeout, Python: interp})
		if err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
		iso := runner.Isolation()
		log.Info("python sandbox", "network_isolated", iso.Network, "process_limit", iso.Processes, "memory_limit", iso.Memory, "notes", iso.Notes)
		deps.PythonTool = sandbox.NewTool(runner)
	}
	reg := mcp.NewRegistry(mcpServers(cfg), log)
	deps.AgentTools = reg.Tools
	reqMCP := requestMCP{policy: mcp.Policy{AllowedCommands: cfg.MCP.AllowedCommands}, log: log}
	if cfg.MCP.AllowRequestServers {
		deps.RequestTools = reqMCP.tools
	}
	g, err := graph.Build(ctx, deps)
	if err != nil {
		return nil, err
	}
	runs := run.New(g, st, cps, run.Options{RunTimeout: cfg.Research.RunTimeout, Logger: log, CompactAfter: o.CompactAfter})
	if err := runs.Recover(ctx, cfg.Runs.ResumeOnStart); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	modelNames := map[string][]string{}
	for role, name := range provider.Configured() {
		modelNames[string(role)] = []string{name}
	}
	h := handler.New(runs, handler.Options{
		AllowedOrigins: cfg.Server.AllowedOrigins,
		MaxBodyBytes:   cfg.Server.MaxBodyBytes,
		Defaults: dm.Defaults{
			MaxPlanIterations:    cfg.Research.MaxPlanIterations,
			MaxStepNum:           cfg.Research.MaxStepNum,
			MaxSearchResults:     cfg.Research.MaxSearchResults,
			InterruptBeforeTools: cfg.Research.InterruptBeforeTools,
		},
		Models:                       modelNames,
		Heartbeat:                    o.Heartbeat,
		Logger:                       log,
		CancelOnDisconnect:           cfg.Runs.CancelOnDisconnect,
		LLM:                          deps.Models.(*models),
		EnableMCPServerConfiguration: cfg.MCP.AllowRequestServers,
		ValidateMCP:                  reqMCP.validate,
		MCPMetadata:                  reqMCP.metadata,
		Status: func() map[string]any {
			return map[string]any{"mcp": map[string]any{"servers": reg.Status(), "request_servers": cfg.MCP.AllowRequestServers}}
		},
	})
	exitWait := o.ExitWait
	if exitWait <= 0 {
		// Streams end once their runs have drained, so the listener waits a little longer than the drain.
		exitWait = cfg.Runs.ShutdownGrace + 5*time.Second
	}
	a := &App{Cfg: cfg, Graph: g, Runs: runs, Handlers: h, Logger: log, exitWait: exitWait, store: st, mcp: reg,
		janitorStop: make(chan struct{}), janitorDone: make(chan struct{})}
	go a.janitor()
	return a, nil
}

// openStore opens PostgreSQL when a database URL is configured, else the embedded SQLite database in the data dir.
func openStore(ctx context.Context, cfg *conf.Config) (store.Store, error) {
	if cfg.Runs.DatabaseURL != "" {
		st, err := postgres.Open(ctx, cfg.Runs.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return st, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "deer-go.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open SQLite store %s: %w", path, err)
	}
	return st, nil
}

// janitor deletes threads older than the retention period, hourly.
func (a *App) janitor() {
	defer close(a.janitorDone)
	if a.Cfg.Runs.Retention <= 0 {
		<-a.janitorStop
		return
	}
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := a.Runs.Prune(context.Background(), a.Cfg.Runs.Retention)
		if err != nil {
			a.Logger.Warn("prune old threads", "err", err)
		} else if n > 0 {
			a.Logger.Info("pruned old threads", "count", n)
		}
		select {
		case <-a.janitorStop:
			return
		case <-t.C:
		}
	}
}

// Close stops the runs (each gets grace to reach its next checkpoint) and closes the store.
func (a *App) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.Runs.Shutdown(ctx, a.Cfg.Runs.ShutdownGrace)
		close(a.janitorStop)
		<-a.janitorDone
		a.closeErr = errors.Join(a.mcp.Close(), a.store.Close())
	})
	return a.closeErr
}

func endpoint(e conf.ModelEndpoint) llm.Endpoint {
	return llm.Endpoint{BaseURL: e.BaseURL, APIKey: e.APIKey, Model: e.Model, BaseURLEnv: e.BaseURLEnv, JSONSchema: e.JSONSchema}
}

// Server returns a Hertz server for the app on ln (or on the configured address when ln is nil).
func (a *App) Server(ln net.Listener) *server.Hertz {
	opts := []config.Option{
		server.WithMaxRequestBodySize(int(a.Cfg.Server.MaxBodyBytes) + 64<<10),
		server.WithSenseClientDisconnection(true),
		server.WithDisablePrintRoute(true),
		server.WithExitWaitTime(a.exitWait),
		server.WithReadTimeout(30 * time.Second),
		server.WithIdleTimeout(2 * time.Minute),
	}
	if ln != nil {
		opts = append(opts, server.WithListener(ln))
	} else {
		opts = append(opts, server.WithHostPorts(net.JoinHostPort(a.Cfg.Server.Host, strconv.Itoa(a.Cfg.Server.Port))))
	}
	h := server.New(opts...)
	a.Handlers.Register(h)
	return h
}

// models adapts the LLM provider to the graph's needs; JSON-mode models are built once.
type models struct {
	p    *llm.Provider
	json map[string]model.ToolCallingChatModel
}

func newModels(p *llm.Provider) *models {
	schema := jsonschema.Reflect(&planSchema{})
	m := &models{p: p, json: map[string]model.ToolCallingChatModel{}}
	for _, role := range []string{graph.RoleBasic, graph.RoleReasoning} {
		m.json[role] = p.JSONModel(llm.Role(role), schema, "research_plan")
	}
	return m
}

func (m *models) Chat(role string) model.ToolCallingChatModel { return m.p.Model(llm.Role(role)) }
func (m *models) Has(role string) bool                        { return m.p.Has(llm.Role(role)) }
func (m *models) JSON(role string) model.ToolCallingChatModel {
	if jm, ok := m.json[role]; ok {
		return jm
	}
	return m.json[graph.RoleBasic]
}

// planSchema is the planner's output schema, sent as json_schema to providers that support it.
type planSchema struct {
	Locale           string       `json:"locale" jsonschema:"description=Locale of the user, e.g. en-US or zh-CN"`
	HasEnoughContext bool         `json:"has_enough_context"`
	Thought          string       `json:"thought"`
	Title            string       `json:"title"`
	Steps            []stepSchema `json:"steps"`
}

type stepSchema struct {
	ID          string   `json:"id"`
	NeedSearch  bool     `json:"need_search"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	StepType    string   `json:"step_type" jsonschema:"enum=research,enum=analysis,enum=processing"`
	DependsOn   []string `json:"depends_on,omitempty"`
}
