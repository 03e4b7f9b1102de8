// Package llm builds chat models per role on top of any OpenAI-compatible
// endpoint (OpenAI, DeepSeek, Qwen, Ollama, vLLM, OpenRouter, ...) and adds
// what the raw client lacks: bounded calls, retries of transient failures and
// errors that tell the operator what to fix.
package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/eino-contrib/jsonschema"
)

// Role names the job a model is used for.
type Role string

const (
	RoleBasic     Role = "basic"
	RoleReasoning Role = "reasoning"
	RoleCode      Role = "code"
)

// DefaultBaseURL is used when the basic endpoint has no BaseURL.
const DefaultBaseURL = "https://api.openai.com/v1"

const (
	defaultTimeout     = 120 * time.Second
	defaultMaxRetries  = 3
	defaultBaseBackoff = 500 * time.Millisecond
	defaultMaxBackoff  = 8 * time.Second
	// A provider asking for a longer pause than this is treated as a
	// failure rather than stalling the research run.
	maxRetryAfter = time.Minute
)

// Endpoint configures one role.
type Endpoint struct {
	BaseURL string
	APIKey  string
	Model   string
	// BaseURLEnv names the env var that sets BaseURL; error messages point
	// the operator at it.
	BaseURLEnv string
	// JSONSchema means the provider accepts response_format json_schema;
	// otherwise JSON mode uses json_object.
	JSONSchema bool
}

// Options configures a Provider.
type Options struct {
	// Endpoints per role. RoleBasic is required. A missing role, or one with
	// an empty Model, uses the basic endpoint. A role with a Model but no
	// BaseURL inherits the basic BaseURL, BaseURLEnv and (if empty) APIKey.
	Endpoints map[Role]Endpoint
	// Timeout bounds each call including its retries; for streams it runs
	// until the stream ends. Zero means 120s, negative means no limit.
	Timeout time.Duration
	// MaxRetries after the first attempt. Zero means 3, negative means none.
	MaxRetries int
	// BaseBackoff is the first retry pause, doubled per retry with jitter
	// up to MaxBackoff. Zero means 500ms.
	BaseBackoff time.Duration
	// MaxBackoff caps the pause. Zero means 8s.
	MaxBackoff time.Duration
	// HTTPClient is copied; its Transport (or the default) is reused.
	HTTPClient *http.Client
	// Logger receives retry warnings. Nil means slog.Default().
	Logger *slog.Logger
}

// Provider hands out chat models per role. It is safe for concurrent use.
type Provider struct {
	endpoints  map[Role]Endpoint // explicitly configured roles, resolved
	models     map[Role]model.ToolCallingChatModel
	httpClient *http.Client
	policy     policy
	log        *slog.Logger
}

// New validates opts and builds a model per configured role. It performs no
// network I/O; an unreachable endpoint shows up on the first call.
func New(ctx context.Context, opts Options) (*Provider, error) {
	basic, ok := opts.Endpoints[RoleBasic]
	if !ok || basic.Model == "" {
		return nil, errors.New("llm: the basic role needs a model name")
	}
	if basic.BaseURL == "" {
		basic.BaseURL = DefaultBaseURL
	}
	p := &Provider{
		endpoints:  make(map[Role]Endpoint),
		models:     make(map[Role]model.ToolCallingChatModel),
		httpClient: newHTTPClient(opts.HTTPClient),
		policy:     newPolicy(opts),
		log:        opts.Logger,
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	for role, ep := range opts.Endpoints {
		if ep.Model == "" {
			continue
		}
		if role == RoleBasic {
			ep = basic
		} else if ep.BaseURL == "" {
			ep.BaseURL, ep.BaseURLEnv = basic.BaseURL, basic.BaseURLEnv
			if ep.APIKey == "" {
				ep.APIKey = basic.APIKey
			}
		}
		if err := checkBaseURL(ep.BaseURL); err != nil {
			return nil, fmt.Errorf("llm: %s endpoint: %w%s", role, err, envSuffix(ep.BaseURLEnv))
		}
		cm, err := p.newChatModel(ctx, ep, nil)
		if err != nil {
			return nil, fmt.Errorf("llm: %s model %q: %w", role, ep.Model, err)
		}
		p.endpoints[role] = ep
		p.models[role] = p.wrap(role, ep, cm)
	}
	return p, nil
}

func envSuffix(env string) string {
	if env == "" {
		return ""
	}
	return "; check " + env
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid base URL %q", redactURL(raw))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q must be an http(s) URL such as http://localhost:11434/v1", redactURL(raw))
	}
	return nil
}

// resolve returns the role actually serving role (basic when unconfigured).
func (p *Provider) resolve(role Role) Role {
	if _, ok := p.endpoints[role]; ok {
		return role
	}
	return RoleBasic
}

// Model returns the chat model for role, falling back to basic.
func (p *Provider) Model(role Role) model.ToolCallingChatModel {
	return p.models[p.resolve(role)]
}

// JSONModel returns the model for role in JSON mode. When the endpoint
// supports json_schema and schema is non-nil the schema is sent under
// schemaName; otherwise json_object is requested, and, as OpenAI requires,
// the prompt itself must mention JSON.
func (p *Provider) JSONModel(role Role, schema *jsonschema.Schema, schemaName string) model.ToolCallingChatModel {
	served := p.resolve(role)
	ep := p.endpoints[served]
	format := &einoopenai.ChatCompletionResponseFormat{Type: einoopenai.ChatCompletionResponseFormatTypeJSONObject}
	if ep.JSONSchema && schema != nil {
		format = &einoopenai.ChatCompletionResponseFormat{
			Type: einoopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &einoopenai.ChatCompletionResponseFormatJSONSchema{
				Name: schemaIdent(schemaName),
				// Strict mode rejects schemas with optional fields, which
				// ordinary Go structs produce.
				Strict:     false,
				JSONSchema: schema,
			},
		}
	}
	// Building the client performs no I/O, so no caller context is needed.
	cm, err := p.newChatModel(context.Background(), ep, format)
	if err != nil {
		return failedModel{err: fmt.Errorf("llm: %s JSON model %q: %w", served, ep.Model, err)}
	}
	return p.wrap(served, ep, cm)
}

// Configured maps each explicitly configured role to its model name.
func (p *Provider) Configured() map[Role]string {
	out := make(map[Role]string, len(p.endpoints))
	for role, ep := range p.endpoints {
		out[role] = ep.Model
	}
	return out
}

// Has reports whether role was configured explicitly (not via fallback).
func (p *Provider) Has(role Role) bool {
	_, ok := p.endpoints[role]
	return ok
}

// Roles lists the configured roles; handy for sorted display.
func (p *Provider) Roles() []Role {
	return slices.Sorted(maps.Keys(p.endpoints))
}

func (p *Provider) newChatModel(ctx context.Context, ep Endpoint, format *einoopenai.ChatCompletionResponseFormat) (*einoopenai.ChatModel, error) {
	cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
		BaseURL:        ep.BaseURL,
		APIKey:         ep.APIKey,
		Model:          ep.Model,
		HTTPClient:     p.httpClient,
		ResponseFormat: format,
	})
	if err != nil {
		return nil, fmt.Errorf("create chat model: %w", err)
	}
	return cm, nil
}

func (p *Provider) wrap(role Role, ep Endpoint, cm model.ToolCallingChatModel) *retrying {
	return &retrying{
		inner:  cm,
		target: target{role: role, model: ep.Model, url: redactURL(ep.BaseURL), env: ep.BaseURLEnv},
		policy: p.policy,
		log:    p.log,
	}
}

var schemaNameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// schemaIdent makes a json_schema name acceptable to OpenAI (letters,
// digits, _ and -, at most 64 characters).
func schemaIdent(name string) string {
	s := schemaNameUnsafe.ReplaceAllString(name, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" || s == "_" {
		return "response"
	}
	return s
}
