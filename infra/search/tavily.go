package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	defaultTavilyBaseURL = "https://api.tavily.com"
	tavilyMaxResults     = 20 // the API rejects larger values
)

// TavilyConfig configures the Tavily engine.
type TavilyConfig struct {
	APIKey  string
	BaseURL string // default https://api.tavily.com
	// SearchDepth is "basic" or "advanced" (default).
	SearchDepth       string
	IncludeImages     bool
	IncludeRawContent bool
	IncludeDomains    []string
	ExcludeDomains    []string
	HTTPClient        *http.Client
	Timeout           time.Duration
}

// Tavily queries the Tavily search API.
type Tavily struct {
	cfg  TavilyConfig
	base string
	req  requester
}

// NewTavily validates cfg and returns a Tavily engine.
func NewTavily(cfg TavilyConfig) (*Tavily, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("%s: %w (set TAVILY_API_KEY)", EngineTavily, ErrMissingAPIKey)
	}
	base, err := parseBaseURL(EngineTavily, cfg.BaseURL, defaultTavilyBaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.SearchDepth == "" {
		cfg.SearchDepth = "advanced"
	}
	return &Tavily{
		cfg:  cfg,
		base: base,
		req:  newRequester(EngineTavily, cfg.HTTPClient, cfg.Timeout, cfg.APIKey),
	}, nil
}

// Name implements Engine.
func (t *Tavily) Name() string { return EngineTavily }

type tavilyRequest struct {
	// APIKey duplicates the Authorization header for older API versions.
	APIKey                   string   `json:"api_key,omitempty"`
	Query                    string   `json:"query"`
	MaxResults               int      `json:"max_results"`
	SearchDepth              string   `json:"search_depth"`
	IncludeImages            bool     `json:"include_images"`
	IncludeImageDescriptions bool     `json:"include_image_descriptions"`
	IncludeRawContent        bool     `json:"include_raw_content"`
	IncludeDomains           []string `json:"include_domains,omitempty"`
	ExcludeDomains           []string `json:"exclude_domains,omitempty"`
}

type tavilyResponse struct {
	Results []struct {
		Title      string  `json:"title"`
		URL        string  `json:"url"`
		Content    string  `json:"content"`
		Score      float64 `json:"score"`
		RawContent *string `json:"raw_content"`
	} `json:"results"`
	// Images are plain URLs, or {url, description} objects when descriptions
	// were requested.
	Images []json.RawMessage `json:"images"`
}

// Search implements Engine.
func (t *Tavily) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineTavily, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	payload, err := json.Marshal(tavilyRequest{
		APIKey:                   t.cfg.APIKey,
		Query:                    query,
		MaxResults:               min(max, tavilyMaxResults),
		SearchDepth:              t.cfg.SearchDepth,
		IncludeImages:            t.cfg.IncludeImages,
		IncludeImageDescriptions: t.cfg.IncludeImages,
		IncludeRawContent:        t.cfg.IncludeRawContent,
		IncludeDomains:           t.cfg.IncludeDomains,
		ExcludeDomains:           t.cfg.ExcludeDomains,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", EngineTavily, err)
	}
	_, body, err := t.req.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/search", bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	results, err := parseTavily(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineTavily, err)
	}
	return Normalize(results, max), nil
}

func parseTavily(body []byte) ([]Result, error) {
	var resp tavilyResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	out := make([]Result, 0, len(resp.Results)+len(resp.Images))
	for _, r := range resp.Results {
		content := r.Content
		if strings.TrimSpace(content) == "" && r.RawContent != nil {
			content = *r.RawContent
		}
		out = append(out, Result{Type: TypePage, Title: r.Title, URL: r.URL, Content: content, Score: r.Score})
	}
	for _, raw := range resp.Images {
		if img, ok := parseTavilyImage(raw); ok {
			out = append(out, img)
		}
	}
	return out, nil
}

// parseTavilyImage skips malformed entries rather than failing the search:
// images are an optional extra.
func parseTavilyImage(raw json.RawMessage) (Result, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return Result{Type: TypeImage, ImageURL: s}, s != ""
	}
	var obj struct {
		URL         string `json:"url"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.URL == "" {
		return Result{}, false
	}
	return Result{Type: TypeImage, ImageURL: obj.URL, ImageDescription: obj.Description}, true
}
