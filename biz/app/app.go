// Package app assembles the service from its configuration: infrastructure, the compiled research graph, the run
// manager and the HTTP server. main and the end-to-end tests build it the same way.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
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
	"github.com/deer-go/deer-go/infra/sandbox"
	"github.com/deer-go/deer-go/infra/search"
	"github.com/deer-go/deer-go/infra/store"
	"github.com/deer-go/deer-go/prompts"
)

// App is the assembled service.
type App struct {
	Cfg      *conf.Config
	Graph    *graph.Graph
	Runs     *run.Manager
	Handlers *handler.Handlers
	Logger   *slog.Logger
	models   map[string][]string
	exitWait time.Duration
}

// Options adjust assembly for tests and embedding.
type Options struct {
	Logger    *slog.Logger
	Heartbeat time.Duration
	// ExitWait is how long a shutdown waits for open requests; default 5s.
	ExitWait time.Duration
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
	deps := graph.Deps{
		Models:             newModels(provider),
		Prompts:            prm,
		Store:              store.NewMemory(),
		Logger:             log,
		AgentMaxIterations: cfg.Research.AgentMaxIterations,
		StepTimeout:        cfg.Research.StepTimeout,
		ToolOutputTokens:   cfg.LLM.ToolOutputTokens,
		TrimTokens:         llm.TrimToTokens,
	}
	engine, err := search.New(search.Options{
		Engine: cfg.Search.Engine, TavilyAPIKey: cfg.Search.TavilyAPIKey, TavilyBaseURL: cfg.Search.TavilyBaseURL,
		SearxHost: cfg.Search.SearxHost, DDGBaseURL: cfg.Search.DDGBaseURL, Timeout: cfg.Search.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	deps.Search = engine
	deps.WebSearchTool = func(max int) tool.InvokableTool {
		return search.NewTool(engine, func(context.Context) int { return max })
	}
	deps.CrawlTool = crawl.NewTool(crawl.New(crawl.Options{
		AllowPrivate: cfg.Crawl.AllowPrivate, Timeout: cfg.Crawl.Timeout, MaxBytes: cfg.Crawl.MaxBytes,
		MaxContentChars: cfg.Crawl.MaxContentChars, UserAgent: "deer-go/1.0 (+research crawler)",
	}))
	if cfg.Python.Enabled {
		runner, err := sandbox.New(sandbox.Options{Enabled: true, Timeout: cfg.Python.Timeout})
		if err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
		deps.PythonTool = sandbox.NewTool(runner)
	}
	g, err := graph.Build(ctx, deps)
	if err != nil {
		return nil, err
	}
	runs := run.New(g, run.Options{RunTimeout: cfg.Research.RunTimeout, Logger: log})
	models := map[string][]string{}
	for role, name := range provider.Configured() {
		models[string(role)] = []string{name}
	}
	h := handler.New(runs, handler.Options{
		AllowedOrigins: cfg.Server.AllowedOrigins,
		MaxBodyBytes:   cfg.Server.MaxBodyBytes,
		Defaults: dm.Defaults{
			MaxPlanIterations: cfg.Research.MaxPlanIterations,
			MaxStepNum:        cfg.Research.MaxStepNum,
			MaxSearchResults:  cfg.Research.MaxSearchResults,
		},
		Models:    models,
		Heartbeat: o.Heartbeat,
		Logger:    log,
	})
	exitWait := o.ExitWait
	if exitWait <= 0 {
		exitWait = 5 * time.Second
	}
	return &App{Cfg: cfg, Graph: g, Runs: runs, Handlers: h, Logger: log, models: models, exitWait: exitWait}, nil
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
