package search

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// SearXNGConfig configures the SearXNG engine.
type SearXNGConfig struct {
	// Host is the instance base URL (e.g. SEARX_HOST), possibly with a path
	// prefix; the JSON output format must be enabled on the instance.
	Host       string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// SearXNG queries a self-hosted SearXNG instance.
type SearXNG struct {
	base string
	req  requester
}

// NewSearXNG validates cfg and returns a SearXNG engine.
func NewSearXNG(cfg SearXNGConfig) (*SearXNG, error) {
	if strings.TrimSpace(cfg.Host) == "" {
		return nil, fmt.Errorf("%s: %w (set SEARX_HOST)", EngineSearXNG, ErrMissingHost)
	}
	base, err := parseBaseURL(EngineSearXNG, cfg.Host, "")
	if err != nil {
		return nil, err
	}
	return &SearXNG{base: base, req: newRequester(EngineSearXNG, cfg.HTTPClient, cfg.Timeout, "")}, nil
}

// Name implements Engine.
func (s *SearXNG) Name() string { return EngineSearXNG }

type searxResponse struct {
	Results []struct {
		Title    string  `json:"title"`
		URL      string  `json:"url"`
		Content  string  `json:"content"`
		Score    float64 `json:"score"`
		Category string  `json:"category"`
		ImgSrc   string  `json:"img_src"`
	} `json:"results"`
	UnresponsiveEngines []json.RawMessage `json:"unresponsive_engines"`
}

// Search implements Engine.
func (s *SearXNG) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineSearXNG, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	endpoint := s.base + "/search?" + url.Values{"q": {query}, "format": {"json"}}.Encode()
	_, body, err := s.req.get(ctx, endpoint, map[string]string{"Accept": "application/json"})
	if err != nil {
		return nil, err
	}
	results, unresponsive, err := parseSearXNG(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineSearXNG, err)
	}
	if len(results) == 0 && unresponsive > 0 {
		slog.WarnContext(ctx, "searxng returned no results", "unresponsive_engines", unresponsive)
	}
	return Normalize(results, max), nil
}

func parseSearXNG(body []byte) ([]Result, int, error) {
	var resp searxResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, 0, fmt.Errorf("decode response: %w", err)
	}
	out := make([]Result, 0, len(resp.Results))
	for _, r := range resp.Results {
		if r.Category == "images" && r.ImgSrc != "" {
			out = append(out, Result{Type: TypeImage, ImageURL: r.ImgSrc, ImageDescription: r.Title})
			continue
		}
		out = append(out, Result{Type: TypePage, Title: r.Title, URL: r.URL, Content: r.Content, Score: r.Score})
	}
	return out, len(resp.UnresponsiveEngines), nil
}
