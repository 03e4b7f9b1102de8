package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// SearchHit is one page in the fake search corpus.
type SearchHit struct {
	Title   string
	URL     string
	Content string
}

// SearchImage is one image in the fake search corpus (Tavily only).
type SearchImage struct {
	URL         string
	Description string
}

// Search is a loopback fake of the Tavily, SearXNG and DuckDuckGo HTML APIs:
//
//	POST /search              Tavily JSON
//	GET  /search?format=json  SearXNG JSON (other formats get 403, as on
//	                          instances with JSON disabled)
//	GET|POST /html/           DuckDuckGo HTML results page
type Search struct {
	// URL is the server's base URL, usable as Tavily base, SearXNG host and
	// DuckDuckGo base alike.
	URL string

	mu         sync.Mutex
	pages      []searchEntry[SearchHit]
	images     []searchEntry[SearchImage]
	failLeft   int
	failStatus int
	apiKey     string
	queries    []string
}

type searchEntry[T any] struct {
	match string
	items []T
}

// NewSearch starts the fake; it is closed when the test ends.
func NewSearch(t testing.TB) *Search {
	t.Helper()
	s := &Search{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", s.serveTavily)
	mux.HandleFunc("GET /search", s.serveSearXNG)
	mux.HandleFunc("/html/", s.serveDDG)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Add makes queries containing match (case-insensitive; "" matches all)
// return hits. The longest matching entry wins, so specific entries override
// a catch-all regardless of order. Add(match) with no hits yields zero results.
func (s *Search) Add(match string, hits ...SearchHit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages = append(s.pages, searchEntry[SearchHit]{match: strings.ToLower(match), items: hits})
}

// AddImages makes Tavily queries containing match return imgs when images are
// requested. Images with a description are served as {url, description}
// objects, the others as plain strings, covering both API shapes.
func (s *Search) AddImages(match string, imgs ...SearchImage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images = append(s.images, searchEntry[SearchImage]{match: strings.ToLower(match), items: imgs})
}

// FailNext makes the next n requests (any protocol) answer with status. A
// status <= 0 drops the connection without a response instead.
func (s *Search) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLeft, s.failStatus = n, status
}

// RequireKey makes the Tavily endpoint answer 401 unless the request carries
// key as a Bearer token or as api_key in the body.
func (s *Search) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Queries returns the query of every request received so far, including
// failed ones, in arrival order.
func (s *Search) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// begin records the query and reports whether an injected failure was served.
func (s *Search) begin(w http.ResponseWriter, query string) bool {
	s.mu.Lock()
	s.queries = append(s.queries, query)
	fail := s.failLeft > 0
	status := s.failStatus
	if fail {
		s.failLeft--
	}
	s.mu.Unlock()
	if !fail {
		return false
	}
	if status <= 0 {
		searchDropConn(w)
		return true
	}
	http.Error(w, "injected failure", status)
	return true
}

func searchDropConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot drop connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if err := conn.Close(); err != nil {
		return // the connection is gone either way
	}
}

func (s *Search) hits(query string) []SearchHit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := searchBestMatch(s.pages, query); ok {
		return e.items
	}
	return searchDefaultHits(query)
}

func (s *Search) imagesFor(query string) []SearchImage {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, _ := searchBestMatch(s.images, query)
	return e.items
}

func searchBestMatch[T any](entries []searchEntry[T], query string) (searchEntry[T], bool) {
	q := strings.ToLower(query)
	best, found := searchEntry[T]{}, false
	for _, e := range entries {
		if strings.Contains(q, e.match) && (!found || len(e.match) > len(best.match)) {
			best, found = e, true
		}
	}
	return best, found
}

func searchDefaultHits(query string) []SearchHit {
	slug := url.PathEscape(strings.Join(strings.Fields(strings.ToLower(query)), "-"))
	return []SearchHit{
		{
			Title:   query + " - Overview",
			URL:     "https://example.com/articles/" + slug,
			Content: "An overview of " + query + ": background, key facts and recent developments.",
		},
		{
			Title:   query + " explained",
			URL:     "https://docs.example.org/guide/" + slug,
			Content: "A detailed explanation of " + query + " with examples and references.",
		},
		{
			Title:   "Latest news on " + query,
			URL:     "https://news.example.net/" + slug,
			Content: "Reporting and analysis about " + query + " from the past year.",
		},
	}
}

func (s *Search) serveTavily(w http.ResponseWriter, r *http.Request) {
	var req struct {
		APIKey            string `json:"api_key"`
		Query             string `json:"query"`
		MaxResults        int    `json:"max_results"`
		IncludeImages     bool   `json:"include_images"`
		IncludeRawContent bool   `json:"include_raw_content"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		searchWriteJSON(w, http.StatusBadRequest, map[string]any{"detail": map[string]string{"error": "invalid JSON body"}})
		return
	}
	if s.begin(w, req.Query) {
		return
	}
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key && req.APIKey != key {
		searchWriteJSON(w, http.StatusUnauthorized, map[string]any{"detail": map[string]string{"error": "Unauthorized: missing or invalid API key."}})
		return
	}
	if req.MaxResults <= 0 {
		req.MaxResults = 5
	}
	hits := s.hits(req.Query)
	results := make([]map[string]any, 0, len(hits))
	for i, h := range hits {
		if i == req.MaxResults {
			break
		}
		var raw any
		if req.IncludeRawContent {
			raw = h.Title + "\n\n" + h.Content
		}
		results = append(results, map[string]any{
			"title": h.Title, "url": h.URL, "content": h.Content,
			"score": 0.9 - 0.1*float64(i), "raw_content": raw,
		})
	}
	images := []any{}
	if req.IncludeImages {
		for _, img := range s.imagesFor(req.Query) {
			if img.Description == "" {
				images = append(images, img.URL)
				continue
			}
			images = append(images, map[string]string{"url": img.URL, "description": img.Description})
		}
	}
	searchWriteJSON(w, http.StatusOK, map[string]any{
		"query": req.Query, "follow_up_questions": nil, "answer": nil,
		"images": images, "results": results, "response_time": 0.42,
	})
}

func (s *Search) serveSearXNG(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("q")
	if s.begin(w, query) {
		return
	}
	if r.URL.Query().Get("format") != "json" {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	hits := s.hits(query)
	results := make([]map[string]any, 0, len(hits))
	for i, h := range hits {
		var parsed []string
		if u, err := url.Parse(h.URL); err == nil {
			parsed = []string{u.Scheme, u.Host, u.Path, "", u.RawQuery, u.Fragment}
		}
		results = append(results, map[string]any{
			"url": h.URL, "title": h.Title, "content": h.Content,
			"engine": "duckduckgo", "engines": []string{"duckduckgo", "brave"},
			"positions": []int{i + 1}, "score": 2.0 / float64(i+1),
			"category": "general", "parsed_url": parsed, "template": "default.html",
		})
	}
	searchWriteJSON(w, http.StatusOK, map[string]any{
		"query": query, "number_of_results": 0, "results": results,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{},
		"suggestions": []any{}, "unresponsive_engines": []any{},
	})
}

func (s *Search) serveDDG(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	query := strings.TrimSpace(r.Form.Get("q"))
	if s.begin(w, query) {
		return
	}
	page := ddgPage{Query: query}
	if query != "" {
		for _, h := range s.hits(query) {
			page.Hits = append(page.Hits, newDDGHit(h, query))
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	if err := ddgTemplate.Execute(w, page); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
	}
}

type ddgPage struct {
	Query string
	Hits  []ddgHit
}

type ddgHit struct {
	Title, Redirect, Host, DisplayURL string
	// The snippet is split around the first occurrence of the query so the
	// template can bold it, as DuckDuckGo does.
	Pre, Match, Post string
}

func newDDGHit(h SearchHit, query string) ddgHit {
	sum := sha256.Sum256([]byte(h.URL))
	hit := ddgHit{
		Title:    h.Title,
		Redirect: "//duckduckgo.com/l/?uddg=" + url.QueryEscape(h.URL) + "&rut=" + hex.EncodeToString(sum[:]),
		Pre:      h.Content,
	}
	if u, err := url.Parse(h.URL); err == nil {
		hit.Host = u.Host
		hit.DisplayURL = strings.TrimPrefix(u.Host+u.Path, "www.")
	}
	if i := strings.Index(strings.ToLower(h.Content), strings.ToLower(query)); i >= 0 && query != "" {
		hit.Pre, hit.Match, hit.Post = h.Content[:i], h.Content[i:i+len(query)], h.Content[i+len(query):]
	}
	return hit
}

// ddgTemplate mirrors the structure of html.duckduckgo.com, including an ad
// block and redirect-wrapped links, so parsers meet the same obstacles.
var ddgTemplate = template.Must(template.New("ddg").Parse(`<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html>
<head>
<meta http-equiv="content-type" content="text/html; charset=UTF-8">
<meta name="referrer" content="origin">
<title>{{.Query}} at DuckDuckGo</title>
<link rel="stylesheet" href="/dist/h.css" type="text/css">
</head>
<body class="body--html">
<div class="header url">
  <form name="x" class="header__form" action="/html/" method="post">
    <input name="q" autocomplete="off" class="search__input" id="search_form_input_homepage" type="text" value="{{.Query}}" />
    <input name="b" id="search_button_homepage" class="search__button search__button--html" value="" title="Search" alt="Search" type="submit" />
  </form>
</div>
<div>
<div class="serp__results">
<div id="links" class="results">
{{if .Hits}}
  <div class="result results_links results_links_deep result--ad result--ad--small">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;ad_provider=bingv7aa&amp;u3=https%3A%2F%2Fshop.example%2Fpromo">Buy {{.Query}} today</a>
      </h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Great deals on {{.Query}}. Ad</a>
      <div class="clear"></div>
    </div>
  </div>
{{end}}
{{range .Hits}}
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="{{.Redirect}}">{{.Title}}</a>
      </h2>
      <div class="result__extras">
        <div class="result__extras__url">
          <span class="result__icon">
            <a rel="nofollow" href="{{.Redirect}}">
              <img class="result__icon__img" width="16" height="16" alt="" src="//external-content.duckduckgo.com/ip3/{{.Host}}.ico" name="i15" />
            </a>
          </span>
          <a class="result__url" href="{{.Redirect}}">{{.DisplayURL}}</a>
        </div>
      </div>
      <a class="result__snippet" href="{{.Redirect}}">{{.Pre}}{{if .Match}}<b>{{.Match}}</b>{{end}}{{.Post}}</a>
      <div class="clear"></div>
    </div>
  </div>
{{else}}
  <div class="no-results">No results.</div>
{{end}}
  <div class="nav-link">
    <form action="/html/" method="post">
      <input type="submit" class="btn btn--alt" value="Next" />
      <input type="hidden" name="q" value="{{.Query}}" />
      <input type="hidden" name="s" value="10" />
    </form>
  </div>
</div>
</div>
</div>
</body>
</html>
`))

func searchWriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return // client went away; nothing useful left to do
	}
}
