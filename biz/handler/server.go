// Package handler is the HTTP surface: request validation, SSE writing, CORS and the small JSON endpoints.
package handler

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/utils"
	"github.com/cloudwego/hertz/pkg/protocol/consts"

	"github.com/deer-go/deer-go/biz/model"
	"github.com/deer-go/deer-go/biz/run"
)

// Options configure the HTTP handlers.
type Options struct {
	AllowedOrigins []string
	MaxBodyBytes   int64
	Defaults       model.Defaults
	// Models lists the configured model name per role for GET /api/config.
	Models    map[string][]string
	Heartbeat time.Duration // SSE keep-alive comment interval; default 15s
	// ValidateMCP checks a request's mcp_settings against the operator's policy.
	ValidateMCP func(raw json.RawMessage) error
	// Status adds service status (e.g. MCP servers) to GET /api/config.
	Status func() map[string]any
	// CancelOnDisconnect stops a run when the client that started it goes away (default: the run goes on and
	// can be re-attached).
	CancelOnDisconnect bool
	Logger             *slog.Logger

	// LLM serves /api/prompt/enhance, /api/prose/generate and the use_llm part of /api/report/evaluate with its
	// "basic" model; nil answers those with 503 (evaluation falls back to the metrics).
	LLM ChatModels
	// EnableMCPServerConfiguration opens POST /api/mcp/server/metadata (ENABLE_MCP_SERVER_CONFIGURATION); off
	// answers 403 as deer-flow does.
	EnableMCPServerConfiguration bool
	// MCPMetadata lists an MCP server's tools for that endpoint; nil answers 501.
	MCPMetadata MCPMetadataFunc
}

// Handlers holds the endpoints' dependencies.
type Handlers struct {
	runs *run.Manager
	opts Options
}

// New returns the handlers.
func New(runs *run.Manager, opts Options) *Handlers {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Handlers{runs: runs, opts: opts}
}

// Register mounts the routes on a Hertz server.
func (h *Handlers) Register(s *server.Hertz) {
	s.Use(h.recoverJSON, h.cors)
	s.GET("/healthz", h.health)
	api := s.Group("/api")
	api.POST("/chat/stream", h.chatStream)
	api.GET("/config", h.config)
	h.registerCompat(api)
	h.registerWeb(s)
	api.GET("/threads", h.listThreads)
	api.GET("/threads/:id", h.getThread)
	api.DELETE("/threads/:id", h.deleteThread)
	api.GET("/threads/:id/report.md", h.threadReport)
	api.GET("/threads/:id/stream", h.threadStream)
	api.POST("/threads/:id/cancel", h.cancelThread)
	s.NoRoute(func(ctx context.Context, c *app.RequestContext) {
		writeError(c, consts.StatusNotFound, "no route for "+string(c.Method())+" "+string(c.Path()))
	})
	s.NoMethod(func(ctx context.Context, c *app.RequestContext) {
		writeError(c, consts.StatusMethodNotAllowed, "method "+string(c.Method())+" not allowed on "+string(c.Path()))
	})
}

func (h *Handlers) health(_ context.Context, c *app.RequestContext) {
	c.JSON(consts.StatusOK, utils.H{"status": "ok"})
}

// config answers the web client's start-up probe: {rag:{provider}, models:{<role>:[name]}}.
func (h *Handlers) config(_ context.Context, c *app.RequestContext) {
	models := h.opts.Models
	if models == nil {
		models = map[string][]string{}
	}
	out := map[string]any{"rag": map[string]any{"provider": nil}, "models": models}
	if h.opts.Status != nil {
		for k, v := range h.opts.Status() {
			out[k] = v
		}
	}
	c.JSON(consts.StatusOK, out)
}

// errorBody is every JSON error: `detail` is what deer-flow's web client shows; `error` repeats it for curl users.
type errorBody struct {
	Detail string `json:"detail"`
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
}

func writeError(c *app.RequestContext, status int, msg string) {
	writeFieldError(c, status, "", msg)
}

func writeFieldError(c *app.RequestContext, status int, field, msg string) {
	if field != "" {
		msg = field + ": " + msg
	}
	b, err := json.Marshal(errorBody{Detail: msg, Error: msg, Field: field})
	if err != nil {
		b = []byte(`{"detail":"internal error","error":"internal error"}`)
	}
	c.Data(status, "application/json; charset=utf-8", b)
	c.Abort()
}

func (h *Handlers) recoverJSON(ctx context.Context, c *app.RequestContext) {
	defer func() {
		if r := recover(); r != nil {
			h.opts.Logger.ErrorContext(ctx, "handler panicked", "path", string(c.Path()), "panic", r)
			writeError(c, consts.StatusInternalServerError, "Internal Server Error")
		}
	}()
	c.Next(ctx)
}
