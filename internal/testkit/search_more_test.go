package testkit

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSearchAllProtocols(t *testing.T) {
	s := NewSearchAll(t)
	s.RequireKey("k1")
	s.Add("golang", SearchHit{Title: "The Go Programming Language", URL: "http://arxiv.org/abs/1234.5678v1", Content: "Go & golang <fast>"})
	s.Add("empty")
	key := http.Header{"X-Subscription-Token": {"k1"}}
	bearer := http.Header{"Authorization": {"Bearer k1"}}

	tests := []struct {
		name     string
		path     string
		header   http.Header
		wantCode int
		want     []string
		notWant  []string
	}{
		{name: "brave", path: "/res/v1/web/search?q=golang&count=5", header: key, wantCode: 200,
			want: []string{`"web"`, `Go \u0026amp; \u003cstrong\u003egolang\u003c/strong\u003e \u0026lt;fast\u0026gt;`}},
		{name: "brave without key", path: "/res/v1/web/search?q=golang", wantCode: 401, want: []string{"SUBSCRIPTION_TOKEN_INVALID"}},
		{name: "brave count too large", path: "/res/v1/web/search?q=golang&count=21", header: key, wantCode: 422},
		{name: "brave empty omits web", path: "/res/v1/web/search?q=empty", header: key, wantCode: 200, notWant: []string{`"web"`}},
		{name: "wikipedia", path: "/w/api.php?action=query&list=search&srsearch=golang&format=json&srlimit=2", wantCode: 200,
			want: []string{`"title":"The Go Programming Language"`, `searchmatch`}},
		{name: "wikipedia bad list", path: "/w/api.php?action=query&list=nope&srsearch=golang", wantCode: 200, want: []string{`"badvalue"`}},
		{name: "wikipedia bad limit", path: "/w/api.php?action=query&list=search&srsearch=golang&srlimit=x", wantCode: 200, want: []string{`"badinteger"`}},
		{name: "arxiv", path: "/api/query?search_query=all:golang&max_results=3", wantCode: 200,
			want: []string{"<entry>", "Go &amp; golang &lt;fast&gt;", "http://arxiv.org/pdf/1234.5678v1"}},
		{name: "arxiv bad max", path: "/api/query?search_query=all:golang&max_results=abc", wantCode: 400, want: []string{"api/errors#"}},
		{name: "arxiv empty", path: "/api/query?search_query=all:empty", wantCode: 200, notWant: []string{"<entry>"}},
		{name: "jina query param", path: "/jina/?q=golang", header: bearer, wantCode: 200, want: []string{`"code":200`, `"url":"http://arxiv.org/abs/1234.5678v1"`}},
		{name: "jina path query", path: "/jina/" + url.PathEscape("about golang"), header: bearer, wantCode: 200, want: []string{`"data":[{`}},
		{name: "jina without key", path: "/jina/?q=golang", wantCode: 401, want: []string{"AuthenticationRequiredError"}},
		{name: "jina no query", path: "/jina/", header: bearer, wantCode: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := searchDo(t, http.MethodGet, s.URL+tc.path, "", "", tc.header)
			if code != tc.wantCode {
				t.Fatalf("status = %d, want %d: %s", code, tc.wantCode, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q: %s", w, body)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("body has %q: %s", w, body)
				}
			}
			if strings.HasPrefix(tc.name, "arxiv") {
				var feed struct {
					XMLName xml.Name
				}
				if err := xml.Unmarshal([]byte(body), &feed); err != nil || feed.XMLName.Local != "feed" {
					t.Errorf("not a valid Atom feed (%v): %s", err, body)
				}
			}
		})
	}
	if got := s.JinaURL(); got != s.URL+"/jina" {
		t.Errorf("JinaURL = %q", got)
	}
	// The original protocols are still served.
	if code, body := searchDo(t, http.MethodGet, s.URL+"/search?q=golang&format=json", "", "", nil); code != 200 || !strings.Contains(body, "go") {
		t.Errorf("searxng through NewSearchAll: %d %s", code, body)
	}
}

func TestSearchAllFailNext(t *testing.T) {
	s := NewSearchAll(t)
	s.FailNext(1, http.StatusBadGateway)
	paths := []string{"/w/api.php?action=query&list=search&srsearch=a", "/w/api.php?action=query&list=search&srsearch=b"}
	wantCodes := []int{http.StatusBadGateway, http.StatusOK}
	for i, p := range paths {
		if code, _ := searchDo(t, http.MethodGet, s.URL+p, "", "", nil); code != wantCodes[i] {
			t.Errorf("request %d: status %d, want %d", i, code, wantCodes[i])
		}
	}
	if q := s.Queries(); len(q) != 2 || q[0] != "a" || q[1] != "b" {
		t.Errorf("queries = %q", q)
	}
}

func TestEmphasize(t *testing.T) {
	tests := []struct{ text, query, want string }{
		{"Go & golang <fast>", "golang", "Go &amp; <b>golang</b> &lt;fast&gt;"},
		{"nothing matches", "zzz", "nothing matches"},
		{"short words skipped", "go sh", "short words skipped"},
		{"amp &", "amp", "<b>amp</b> &amp;"},
	}
	for _, tc := range tests {
		if got := emphasize(tc.text, tc.query, "<b>", "</b>"); got != tc.want {
			t.Errorf("emphasize(%q, %q) = %q, want %q", tc.text, tc.query, got, tc.want)
		}
	}
}
