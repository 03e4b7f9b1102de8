package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	defaultJinaBaseURL = "https://s.jina.ai"
	// jinaMaxContentRunes trims Jina's full-page content to snippet size;
	// whole pages are the crawler's job and would flood the model context.
	jinaMaxContentRunes = 3000
)

// JinaConfig configures the Jina search engine (s.jina.ai).
type JinaConfig struct {
	APIKey     string
	BaseURL    string // default https://s.jina.ai
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Jina queries the Jina AI search API.
type Jina struct {
	key  string
	base string
	req  requester
}

// NewJina validates cfg and returns a Jina engine.
func NewJina(cfg JinaConfig) (*Jina, error) {
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, fmt.Errorf("%s: %w (set JINA_API_KEY)", EngineJina, ErrMissingAPIKey)
	}
	base, err := parseBaseURL(EngineJina, cfg.BaseURL, defaultJinaBaseURL)
	if err != nil {
		return nil, err
	}
	return &Jina{key: key, base: base, req: newRequester(EngineJina, cfg.HTTPClient, cfg.Timeout, key)}, nil
}

// Name implements Engine.
func (j *Jina) Name() string { return EngineJina }

type jinaResponse struct {
	// Code mirrors the HTTP status; some failures arrive as 200 with a
	// different code.
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Content     string `json:"content"`
		Description string `json:"description"`
	} `json:"data"`
}

// Search implements Engine.
func (j *Jina) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineJina, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	endpoint := j.base + "/?" + url.Values{"q": {query}}.Encode()
	_, body, err := j.req.get(ctx, endpoint, map[string]string{"Accept": "application/json", "Authorization": "Bearer " + j.key})
	if err != nil {
		return nil, err
	}
	results, err := parseJina(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineJina, err)
	}
	return Normalize(results, max), nil
}

func parseJina(body []byte) ([]Result, error) {
	var resp jinaResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if resp.Code != 0 && (resp.Code < 200 || resp.Code > 299) {
		return nil, fmt.Errorf("%w: code %d: %s", ErrBackend, resp.Code, collapseSpace(resp.Message))
	}
	out := make([]Result, 0, len(resp.Data))
	for _, d := range resp.Data {
		content := strings.TrimSpace(d.Content)
		if content == "" {
			content = strings.TrimSpace(d.Description)
		}
		out = append(out, Result{
			Type:    TypePage,
			Title:   d.Title,
			URL:     d.URL,
			Content: truncateRunes(content, jinaMaxContentRunes),
		})
	}
	return out, nil
}
