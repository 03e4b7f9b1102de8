package testkit

import (
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"text/template"
)

// SearchJinaPath is where NewSearchAll serves the Jina search API, so that
// its catch-all path scheme cannot shadow the other protocols.
const SearchJinaPath = "/jina"

// NewSearchAll starts a fake that speaks every protocol of NewSearch plus:
//
//	GET /res/v1/web/search   Brave web search (X-Subscription-Token)
//	GET /w/api.php           MediaWiki list=search (Wikipedia)
//	GET /api/query           arXiv export API (Atom feed)
//	GET /jina/?q=… or /jina/<escaped query>
//	                         Jina search (JSON, Bearer token); see JinaURL
//
// All protocols share the corpus (Add), FailNext and Queries. RequireKey
// guards the keyed APIs: Tavily, Brave and Jina. Wikipedia has no URLs of its
// own, so its hits are served by title and clients derive the article link.
func NewSearchAll(t testing.TB) *Search {
	t.Helper()
	s := &Search{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", s.serveTavily)
	mux.HandleFunc("GET /search", s.serveSearXNG)
	mux.HandleFunc("/html/", s.serveDDG)
	mux.HandleFunc("GET /res/v1/web/search", s.serveBrave)
	mux.HandleFunc("GET /w/api.php", s.serveWikipedia)
	mux.HandleFunc("GET /api/query", s.serveArxiv)
	mux.HandleFunc("GET "+SearchJinaPath+"/", s.serveJina)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// JinaURL is the base URL of the fake Jina search API.
func (s *Search) JinaURL() string { return s.URL + SearchJinaPath }

func (s *Search) requiredKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiKey
}

// searchLimit parses a result-count parameter, using def when absent.
func searchLimit(raw string, def int) (int, bool) {
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	return n, err == nil && n > 0
}

// emphasize HTML-escapes text and wraps the first query word found in it in
// open/close markup, as Brave (<strong>) and MediaWiki (searchmatch spans)
// do, so clients have to strip tags and decode entities.
func emphasize(text, query, open, close string) string {
	lower := strings.ToLower(text)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if len(w) < 3 {
			continue
		}
		// Lowercasing may change byte lengths outside ASCII; only trust
		// the index when it lines up with the original text.
		i := strings.Index(lower, w)
		if i < 0 || len(lower) != len(text) {
			continue
		}
		return html.EscapeString(text[:i]) + open + html.EscapeString(text[i:i+len(w)]) + close +
			html.EscapeString(text[i+len(w):])
	}
	return html.EscapeString(text)
}

func (s *Search) serveBrave(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("q")
	if s.begin(w, query) {
		return
	}
	if key := s.requiredKey(); key != "" && r.Header.Get("X-Subscription-Token") != key {
		searchWriteJSON(w, http.StatusUnauthorized, map[string]any{
			"type": "ErrorResponse",
			"error": map[string]any{
				"id": "c1f3e2a0", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID",
				"detail": "The provided subscription token is invalid.",
			},
		})
		return
	}
	count, ok := searchLimit(r.URL.Query().Get("count"), 20)
	if !ok || count > 20 || strings.TrimSpace(query) == "" {
		searchWriteJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"type":  "ErrorResponse",
			"error": map[string]any{"status": 422, "code": "VALIDATION", "detail": "Unable to validate request parameter(s)"},
		})
		return
	}
	resp := map[string]any{
		"type":  "search",
		"query": map[string]any{"original": query, "more_results_available": false},
		"mixed": map[string]any{"type": "mixed", "main": []any{}},
	}
	var results []map[string]any
	for i, h := range s.hits(query) {
		if i == count {
			break
		}
		host := ""
		if u, err := url.Parse(h.URL); err == nil {
			host = u.Host
		}
		results = append(results, map[string]any{
			"type": "search_result", "subtype": "generic", "title": h.Title, "url": h.URL,
			"description":     emphasize(h.Content, query, "<strong>", "</strong>"),
			"is_source_local": false, "language": "en", "family_friendly": true,
			"profile":   map[string]any{"name": host, "url": h.URL, "long_name": host},
			"meta_url":  map[string]any{"scheme": "https", "netloc": host, "hostname": host},
			"page_age":  "2024-05-01T00:00:00",
			"age":       "May 1, 2024",
			"thumbnail": map[string]any{"src": "https://imgs.search.brave.com/x.jpg"},
		})
	}
	// Brave leaves out the whole web section when nothing matched.
	if len(results) > 0 {
		resp["web"] = map[string]any{"type": "search", "results": results, "family_friendly": true}
	}
	searchWriteJSON(w, http.StatusOK, resp)
}

func (s *Search) serveWikipedia(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := q.Get("srsearch")
	if s.begin(w, query) {
		return
	}
	// MediaWiki reports parameter problems as HTTP 200 with an error object.
	limit, ok := searchLimit(q.Get("srlimit"), 10)
	switch {
	case q.Get("action") != "query" || q.Get("list") != "search":
		searchWriteJSON(w, http.StatusOK, map[string]any{"error": map[string]any{
			"code": "badvalue", "info": `Unrecognized value for parameter "list".`, "*": "See /w/api.php for API usage.",
		}})
		return
	case strings.TrimSpace(query) == "":
		searchWriteJSON(w, http.StatusOK, map[string]any{"error": map[string]any{
			"code": "missingparam", "info": `The "srsearch" parameter must be set.`,
		}})
		return
	case !ok:
		searchWriteJSON(w, http.StatusOK, map[string]any{"error": map[string]any{
			"code": "badinteger", "info": `Invalid value "` + q.Get("srlimit") + `" for integer parameter "srlimit".`,
		}})
		return
	}
	hits := s.hits(query)
	search := make([]map[string]any, 0, len(hits))
	for i, h := range hits {
		if i == limit {
			break
		}
		sum := fnv.New32a()
		if _, err := sum.Write([]byte(h.Title)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		search = append(search, map[string]any{
			"ns": 0, "title": h.Title, "pageid": sum.Sum32() % 10_000_000,
			"size": 1000 + 37*len(h.Content), "wordcount": len(strings.Fields(h.Content)),
			"snippet":   emphasize(h.Content, query, `<span class="searchmatch">`, `</span>`),
			"timestamp": "2024-04-30T12:00:00Z",
		})
	}
	resp := map[string]any{
		"batchcomplete": "",
		"query": map[string]any{
			"searchinfo": map[string]any{"totalhits": len(hits)},
			"search":     search,
		},
	}
	if len(hits) > limit {
		resp["continue"] = map[string]any{"sroffset": limit, "continue": "-||"}
	}
	searchWriteJSON(w, http.StatusOK, resp)
}

type arxivFeedData struct {
	Query   string
	Max     int
	Total   int
	Entries []arxivEntryData
}

type arxivEntryData struct {
	ID, Title, Summary, PDF string
}

func (s *Search) serveArxiv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	raw := q.Get("search_query")
	query := strings.TrimSpace(strings.ReplaceAll(raw, "all:", ""))
	if s.begin(w, query) {
		return
	}
	max, ok := searchLimit(q.Get("max_results"), 10)
	if !ok {
		// The real API answers bad parameters with HTTP 400 and an Atom
		// feed holding one error entry.
		w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		s.writeArxiv(w, arxivFeedData{Query: raw, Max: 0, Total: 1, Entries: []arxivEntryData{{
			ID:      "http://arxiv.org/api/errors#max_results_must_be_an_integer",
			Title:   "Error",
			Summary: "max_results must be an integer",
		}}})
		return
	}
	hits := s.hits(query)
	feed := arxivFeedData{Query: raw, Max: max, Total: len(hits)}
	for i, h := range hits {
		if i == max {
			break
		}
		feed.Entries = append(feed.Entries, arxivEntryData{
			ID: h.URL,
			// arXiv wraps long titles and abstracts with hard line breaks.
			Title:   wrapWords(h.Title, 40),
			Summary: "  " + wrapWords(h.Content, 60) + "\n",
			PDF:     strings.Replace(h.URL, "/abs/", "/pdf/", 1),
		})
	}
	w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
	s.writeArxiv(w, feed)
}

func (s *Search) writeArxiv(w http.ResponseWriter, feed arxivFeedData) {
	if err := arxivTemplate.Execute(w, feed); err != nil {
		return // headers are gone; the client sees a truncated feed
	}
}

// wrapWords breaks s into lines of about width bytes.
func wrapWords(s string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if line+1+len(word) > width {
				b.WriteString("\n  ")
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

func xmlEscape(s string) (string, error) {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return "", fmt.Errorf("escape xml: %w", err)
	}
	return b.String(), nil
}

var arxivTemplate = template.Must(template.New("arxiv").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query={{x .Query}}&amp;id_list=&amp;start=0&amp;max_results={{.Max}}" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query={{x .Query}}&amp;id_list=&amp;start=0&amp;max_results={{.Max}}</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2024-05-01T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{{.Total}}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{{.Max}}</opensearch:itemsPerPage>
{{- range .Entries}}
  <entry>
    <id>{{x .ID}}</id>
    <updated>2024-04-29T17:59:59Z</updated>
    <published>2024-04-29T17:59:59Z</published>
    <title>{{x .Title}}</title>
    <summary>{{x .Summary}}</summary>
    <author>
      <name>Ada Lovelace</name>
    </author>
    <author>
      <name>Alan Turing</name>
    </author>
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">12 pages, 3 figures</arxiv:comment>
    {{- if .PDF}}
    <link href="{{x .ID}}" rel="alternate" type="text/html"/>
    <link title="pdf" href="{{x .PDF}}" rel="related" type="application/pdf"/>
    {{- end}}
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
{{- end}}
</feed>
`))

func (s *Search) serveJina(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query().Get("q")
	if rest := strings.TrimPrefix(r.URL.Path, SearchJinaPath+"/"); query == "" && rest != "" {
		query = rest // r.URL.Path is already unescaped
	}
	if s.begin(w, query) {
		return
	}
	if key := s.requiredKey(); key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		searchWriteJSON(w, http.StatusUnauthorized, map[string]any{
			"data": nil, "code": 401, "name": "AuthenticationRequiredError", "status": 40103,
			"message":         "Authentication is required to use this endpoint. Please provide a valid API key via Authorization header.",
			"readableMessage": "AuthenticationRequiredError: Authentication is required to use this endpoint.",
		})
		return
	}
	if strings.TrimSpace(query) == "" {
		searchWriteJSON(w, http.StatusBadRequest, map[string]any{
			"data": nil, "code": 400, "name": "ParamValidationError", "status": 40001,
			"message": "Query is required",
		})
		return
	}
	hits := s.hits(query)
	data := make([]map[string]any, 0, len(hits))
	total := 0
	for _, h := range hits {
		tokens := len(strings.Fields(h.Content)) + 10
		total += tokens
		data = append(data, map[string]any{
			"title": h.Title, "url": h.URL, "description": h.Content, "content": h.Content,
			"date": "May 1, 2024", "usage": map[string]any{"tokens": tokens},
		})
	}
	searchWriteJSON(w, http.StatusOK, map[string]any{
		"code": 200, "status": 20000, "data": data,
		"meta": map[string]any{"usage": map[string]any{"tokens": total}},
	})
}
