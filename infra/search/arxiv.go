package search

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	defaultArxivBaseURL = "http://export.arxiv.org"
	arxivMaxResults     = 50
)

// ArxivConfig configures the arXiv API engine.
type ArxivConfig struct {
	BaseURL    string // default http://export.arxiv.org
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Arxiv searches arXiv papers through the export API (Atom feed).
type Arxiv struct {
	base string
	req  requester
}

// NewArxiv validates cfg and returns an arXiv engine.
func NewArxiv(cfg ArxivConfig) (*Arxiv, error) {
	base, err := parseBaseURL(EngineArxiv, cfg.BaseURL, defaultArxivBaseURL)
	if err != nil {
		return nil, err
	}
	return &Arxiv{base: base, req: newRequester(EngineArxiv, cfg.HTTPClient, cfg.Timeout, "")}, nil
}

// Name implements Engine.
func (a *Arxiv) Name() string { return EngineArxiv }

// Search implements Engine.
func (a *Arxiv) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = collapseSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineArxiv, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	endpoint := a.base + "/api/query?" + url.Values{
		"search_query": {"all:" + query},
		"start":        {"0"},
		"max_results":  {strconv.Itoa(min(max, arxivMaxResults))},
	}.Encode()
	_, body, err := a.req.get(ctx, endpoint, map[string]string{"Accept": "application/atom+xml"})
	if err != nil {
		return nil, err
	}
	results, err := parseArxiv(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineArxiv, err)
	}
	return Normalize(results, max), nil
}

// Namespace-free tags: arXiv uses the Atom namespace, but matching on local
// names keeps the parser tolerant of mirrors that declare it differently.
type arxivFeed struct {
	XMLName xml.Name     `xml:"feed"`
	Entries []arxivEntry `xml:"entry"`
}

type arxivEntry struct {
	ID      string `xml:"id"`
	Title   string `xml:"title"`
	Summary string `xml:"summary"`
	Links   []struct {
		Href string `xml:"href,attr"`
		Rel  string `xml:"rel,attr"`
		Type string `xml:"type,attr"`
	} `xml:"link"`
}

// parseArxiv turns an arXiv Atom feed into results. The API signals bad
// queries with a 200 feed holding a single entry whose id is an
// .../api/errors#... URL; that becomes an ErrBackend error.
func parseArxiv(body []byte) ([]Result, error) {
	var feed arxivFeed
	dec := xml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&feed); err != nil {
		return nil, fmt.Errorf("decode atom feed: %w", err)
	}
	if feed.XMLName.Local != "feed" {
		return nil, errors.New("decode atom feed: root element is not <feed>")
	}
	out := make([]Result, 0, len(feed.Entries))
	for _, e := range feed.Entries {
		id := strings.TrimSpace(e.ID)
		if strings.Contains(id, "arxiv.org/api/errors") {
			return nil, fmt.Errorf("%w: %s", ErrBackend, collapseSpace(e.Summary))
		}
		out = append(out, Result{
			Type:    TypePage,
			Title:   collapseSpace(e.Title),
			URL:     arxivAbsURL(e),
			Content: collapseSpace(e.Summary),
		})
	}
	return out, nil
}

// arxivAbsURL prefers the HTML abstract link and falls back to the entry id,
// which is the abstract URL as well.
func arxivAbsURL(e arxivEntry) string {
	for _, l := range e.Links {
		if l.Rel == "alternate" && strings.TrimSpace(l.Href) != "" {
			return strings.TrimSpace(l.Href)
		}
	}
	return strings.TrimSpace(e.ID)
}
