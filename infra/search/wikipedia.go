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
	defaultWikipediaBaseURL = "https://en.wikipedia.org"
	defaultWikipediaLang    = "en"
	wikipediaMaxLimit       = 50
)

// WikipediaConfig configures the Wikipedia (MediaWiki search API) engine.
type WikipediaConfig struct {
	BaseURL string // default https://en.wikipedia.org
	// Lang picks the wiki the result links point to. Empty derives it from
	// a <lang>.wikipedia.org base URL, else "en".
	Lang       string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Wikipedia searches Wikipedia articles through the MediaWiki API.
type Wikipedia struct {
	base string
	lang string
	req  requester
}

// NewWikipedia validates cfg and returns a Wikipedia engine.
func NewWikipedia(cfg WikipediaConfig) (*Wikipedia, error) {
	base, err := parseBaseURL(EngineWikipedia, cfg.BaseURL, defaultWikipediaBaseURL)
	if err != nil {
		return nil, err
	}
	lang := strings.ToLower(strings.TrimSpace(cfg.Lang))
	if lang == "" {
		lang = langFromHost(base)
	}
	if !validWikiLang(lang) {
		return nil, fmt.Errorf("%s: invalid language code %q", EngineWikipedia, cfg.Lang)
	}
	return &Wikipedia{base: base, lang: lang, req: newRequester(EngineWikipedia, cfg.HTTPClient, cfg.Timeout, "")}, nil
}

// langFromHost returns "de" for https://de.wikipedia.org (or de.m.…) and the
// default language for any other host, e.g. a mirror or a test server.
func langFromHost(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return defaultWikipediaLang
	}
	host := strings.ToLower(u.Hostname())
	if !strings.HasSuffix(host, ".wikipedia.org") {
		return defaultWikipediaLang
	}
	first, _, _ := strings.Cut(host, ".")
	if !validWikiLang(first) || first == "www" {
		return defaultWikipediaLang
	}
	return first
}

// Name implements Engine.
func (w *Wikipedia) Name() string { return EngineWikipedia }

type wikipediaResponse struct {
	Error *struct {
		Code string `json:"code"`
		Info string `json:"info"`
	} `json:"error"`
	Query *struct {
		Search []struct {
			Title   string `json:"title"`
			Snippet string `json:"snippet"`
		} `json:"search"`
	} `json:"query"`
}

// Search implements Engine.
func (w *Wikipedia) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineWikipedia, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	endpoint := w.base + "/w/api.php?" + url.Values{
		"action":   {"query"},
		"list":     {"search"},
		"srsearch": {query},
		"format":   {"json"},
		"srlimit":  {strconv.Itoa(min(max, wikipediaMaxLimit))},
	}.Encode()
	_, body, err := w.req.get(ctx, endpoint, map[string]string{"Accept": "application/json"})
	if err != nil {
		return nil, err
	}
	results, err := w.parse(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineWikipedia, err)
	}
	return Normalize(results, max), nil
}

func (w *Wikipedia) parse(body []byte) ([]Result, error) {
	var resp wikipediaResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	// MediaWiki reports bad parameters with HTTP 200 and an error object.
	if resp.Error != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBackend, resp.Error.Code, resp.Error.Info)
	}
	if resp.Query == nil {
		return []Result{}, nil
	}
	out := make([]Result, 0, len(resp.Query.Search))
	for _, s := range resp.Query.Search {
		title := strings.TrimSpace(s.Title)
		if title == "" {
			continue
		}
		out = append(out, Result{
			Type:    TypePage,
			Title:   title,
			URL:     wikiPageURL(w.lang, title),
			Content: stripHTML(s.Snippet),
		})
	}
	return out, nil
}

// wikiPageURL builds the article link the way Wikipedia writes it: spaces
// become underscores, and only bytes that are not valid in a path are
// percent-encoded, so "Go_(programming_language)" keeps its parentheses.
func wikiPageURL(lang, title string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.WriteString("https://" + lang + ".wikipedia.org/wiki/")
	for _, c := range []byte(strings.ReplaceAll(title, " ", "_")) {
		if isPathByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// isPathByte reports whether c may appear unescaped in a URL path (RFC 3986
// unreserved, sub-delims, ':', '@' and '/').
func isPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// validWikiLang accepts codes such as "en", "zh-yue" or "simple": the first
// label of a Wikipedia host name.
func validWikiLang(s string) bool {
	if len(s) < 2 || len(s) > 16 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
