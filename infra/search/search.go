// Package search talks to web search backends (Tavily, SearXNG, DuckDuckGo)
// and exposes them to agents as the web_search tool.
package search

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Result types as understood by the web UI.
const (
	TypePage  = "page"
	TypeImage = "image"
)

// Engine names accepted by New.
const (
	EngineTavily     = "tavily"
	EngineSearXNG    = "searxng"
	EngineDuckDuckGo = "duckduckgo"
)

// Result is one search hit. Pages use Title/URL/Content/Score, images use
// ImageURL/ImageDescription; Normalize clears the fields of the other kind.
type Result struct {
	Type             string  `json:"type"`
	Title            string  `json:"title,omitempty"`
	URL              string  `json:"url,omitempty"`
	Content          string  `json:"content,omitempty"`
	Score            float64 `json:"score,omitempty"`
	ImageURL         string  `json:"image_url,omitempty"`
	ImageDescription string  `json:"image_description,omitempty"`
}

// Engine is a web search backend.
type Engine interface {
	Name() string
	// Search returns at most max pages (plus any images) for query.
	Search(ctx context.Context, query string, max int) ([]Result, error)
}

// Configuration errors returned (wrapped) by New and the engine constructors.
var (
	ErrUnknownEngine = errors.New("unknown search engine")
	ErrMissingAPIKey = errors.New("missing API key")
	ErrMissingHost   = errors.New("missing host")
	ErrInvalidURL    = errors.New("invalid base URL")
	ErrEmptyQuery    = errors.New("empty search query")
)

// Options selects and configures an engine from application settings.
type Options struct {
	// Engine is one of "tavily", "searxng" or "duckduckgo"; empty means tavily,
	// the same default as deer-flow.
	Engine        string
	TavilyAPIKey  string
	TavilyBaseURL string
	SearxHost     string
	DDGBaseURL    string
	// HTTPClient is shared by the engine; nil builds one with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each HTTP attempt; zero means 20s.
	Timeout time.Duration

	// Tavily-only refinements.
	IncludeDomains []string
	ExcludeDomains []string
	DisableImages  bool
}

// New builds the engine selected by opts.Engine.
func New(opts Options) (Engine, error) {
	name := strings.ToLower(strings.TrimSpace(opts.Engine))
	switch name {
	case "", EngineTavily:
		return NewTavily(TavilyConfig{
			APIKey:         opts.TavilyAPIKey,
			BaseURL:        opts.TavilyBaseURL,
			IncludeImages:  !opts.DisableImages,
			IncludeDomains: opts.IncludeDomains,
			ExcludeDomains: opts.ExcludeDomains,
			HTTPClient:     opts.HTTPClient,
			Timeout:        opts.Timeout,
		})
	case EngineSearXNG:
		return NewSearXNG(SearXNGConfig{
			Host:       opts.SearxHost,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	case EngineDuckDuckGo:
		return NewDuckDuckGo(DuckDuckGoConfig{
			BaseURL:    opts.DDGBaseURL,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	default:
		return nil, fmt.Errorf("%w %q (want %s, %s or %s)", ErrUnknownEngine, opts.Engine,
			EngineTavily, EngineSearXNG, EngineDuckDuckGo)
	}
}

// defaultMax is used when a caller passes a non-positive limit.
const defaultMax = 5

func effectiveMax(max int) int {
	if max <= 0 {
		return defaultMax
	}
	return max
}
