// Package search talks to web search backends (Tavily, SearXNG, DuckDuckGo,
// Brave, Wikipedia, arXiv and Jina) and exposes them to agents as the
// web_search tool.
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
	EngineBrave      = "brave"
	EngineWikipedia  = "wikipedia"
	EngineArxiv      = "arxiv"
	EngineJina       = "jina"
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
	// ErrBackend marks errors a backend reports inside a successful HTTP
	// response (MediaWiki error objects, arXiv error entries, Jina codes).
	ErrBackend = errors.New("search backend error")
)

// Options selects and configures an engine from application settings.
type Options struct {
	// Engine is one of "tavily", "searxng", "duckduckgo", "brave",
	// "wikipedia", "arxiv" or "jina"; empty means tavily, the same default
	// as deer-flow.
	Engine           string
	TavilyAPIKey     string
	TavilyBaseURL    string
	SearxHost        string
	DDGBaseURL       string
	BraveAPIKey      string // BRAVE_SEARCH_API_KEY
	BraveBaseURL     string
	WikipediaBaseURL string
	ArxivBaseURL     string
	JinaAPIKey       string // JINA_API_KEY
	JinaBaseURL      string
	// HTTPClient is shared by the engine; nil builds one with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each HTTP attempt; zero means 20s.
	Timeout time.Duration

	// Tavily-only refinements.
	IncludeDomains []string
	ExcludeDomains []string
	DisableImages  bool
	// IncludeRawContent asks Tavily for the page text, used as the result
	// content when the snippet is empty.
	IncludeRawContent bool
}

// New builds the engine selected by opts.Engine.
func New(opts Options) (Engine, error) {
	name := strings.ToLower(strings.TrimSpace(opts.Engine))
	switch name {
	case "", EngineTavily:
		return NewTavily(TavilyConfig{
			APIKey:            opts.TavilyAPIKey,
			BaseURL:           opts.TavilyBaseURL,
			IncludeImages:     !opts.DisableImages,
			IncludeRawContent: opts.IncludeRawContent,
			IncludeDomains:    opts.IncludeDomains,
			ExcludeDomains:    opts.ExcludeDomains,
			HTTPClient:        opts.HTTPClient,
			Timeout:           opts.Timeout,
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
	case EngineBrave:
		return NewBrave(BraveConfig{
			APIKey:     opts.BraveAPIKey,
			BaseURL:    opts.BraveBaseURL,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	case EngineWikipedia:
		return NewWikipedia(WikipediaConfig{
			BaseURL:    opts.WikipediaBaseURL,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	case EngineArxiv:
		return NewArxiv(ArxivConfig{
			BaseURL:    opts.ArxivBaseURL,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	case EngineJina:
		return NewJina(JinaConfig{
			APIKey:     opts.JinaAPIKey,
			BaseURL:    opts.JinaBaseURL,
			HTTPClient: opts.HTTPClient,
			Timeout:    opts.Timeout,
		})
	default:
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownEngine, opts.Engine, strings.Join(EngineNames(), ", "))
	}
}

// EngineNames lists the engines New accepts, default first.
func EngineNames() []string {
	return []string{EngineTavily, EngineSearXNG, EngineDuckDuckGo, EngineBrave, EngineWikipedia, EngineArxiv, EngineJina}
}

// defaultMax is used when a caller passes a non-positive limit.
const defaultMax = 5

func effectiveMax(max int) int {
	if max <= 0 {
		return defaultMax
	}
	return max
}
