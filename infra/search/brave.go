package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	defaultBraveBaseURL = "https://api.search.brave.com"
	braveMaxCount       = 20 // the API rejects larger counts
)

// BraveConfig configures the Brave Search API engine.
type BraveConfig struct {
	APIKey     string
	BaseURL    string // default https://api.search.brave.com
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Brave queries the Brave Search web API.
type Brave struct {
	key  string
	base string
	req  requester
}

// NewBrave validates cfg and returns a Brave engine.
func NewBrave(cfg BraveConfig) (*Brave, error) {
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, fmt.Errorf("%s: %w (set BRAVE_SEARCH_API_KEY)", EngineBrave, ErrMissingAPIKey)
	}
	base, err := parseBaseURL(EngineBrave, cfg.BaseURL, defaultBraveBaseURL)
	if err != nil {
		return nil, err
	}
	return &Brave{key: key, base: base, req: newRequester(EngineBrave, cfg.HTTPClient, cfg.Timeout, key)}, nil
}

// Name implements Engine.
func (b *Brave) Name() string { return EngineBrave }

type braveResponse struct {
	// Web is absent when nothing matched.
	Web *struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			ExtraSnippets []string `json:"extra_snippets"`
		} `json:"results"`
	} `json:"web"`
}

// Search implements Engine.
func (b *Brave) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineBrave, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	endpoint := b.base + "/res/v1/web/search?" + url.Values{
		"q":     {query},
		"count": {strconv.Itoa(min(max, braveMaxCount))},
	}.Encode()
	_, body, err := b.req.get(ctx, endpoint, map[string]string{"Accept": "application/json", "X-Subscription-Token": b.key})
	if err != nil {
		return nil, err
	}
	results, err := parseBrave(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineBrave, err)
	}
	return Normalize(results, max), nil
}

func parseBrave(body []byte) ([]Result, error) {
	var resp braveResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if resp.Web == nil {
		return []Result{}, nil
	}
	out := make([]Result, 0, len(resp.Web.Results))
	for _, r := range resp.Web.Results {
		content := stripHTML(r.Description)
		if content == "" && len(r.ExtraSnippets) > 0 {
			content = stripHTML(strings.Join(r.ExtraSnippets, " "))
		}
		out = append(out, Result{Type: TypePage, Title: stripHTML(r.Title), URL: r.URL, Content: content})
	}
	return out, nil
}
