package search

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

const ddgSample = `<!DOCTYPE html><html><body>
<div id="links" class="results">
 <div class="result results_links results_links_deep result--ad">
  <div class="links_main links_deep result__body">
   <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Ad title</a></h2>
   <a class="result__snippet" href="https://duckduckgo.com/y.js">Ad snippet</a>
  </div>
 </div>
 <div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
   <h2 class="result__title">
    <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F%3Fx%3D1%26y%3D2&amp;rut=abc">The <b>Go</b>
      Documentation</a>
   </h2>
   <div class="result__extras"><a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F">go.dev/doc</a></div>
   <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F">Learn <b>Go</b> &amp; its   tools.</a>
  </div>
 </div>
 <div class="result results_links web-result">
  <div class="result__body">
   <h2 class="result__title"><a class="result__a" href="https://direct.example/page">Direct link</a></h2>
  </div>
 </div>
 <div class="result web-result">
  <h2><a class="result__a" href="/l/?uddg=https%3A%2F%2Frel.example%2F">Relative redirect</a></h2>
  <div class="result__snippet">Snippet in a div</div>
 </div>
 <div class="result"><a class="result__a" href="javascript:alert(1)">Script</a></div>
 <div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=javascript%3Aalert(1)">Wrapped script</a></div>
 <div class="result"><a class="result__a" href="//duckduckgo.com/settings">Settings</a></div>
</div></body></html>`

func TestParseDDG(t *testing.T) {
	tests := []struct {
		name string
		html string
		want []Result
	}{
		{
			name: "realistic page",
			html: ddgSample,
			want: []Result{
				{Type: TypePage, Title: "The Go Documentation", URL: "https://go.dev/doc/?x=1&y=2", Content: "Learn Go & its tools."},
				{Type: TypePage, Title: "Direct link", URL: "https://direct.example/page"},
				{Type: TypePage, Title: "Relative redirect", URL: "https://rel.example/", Content: "Snippet in a div"},
			},
		},
		{name: "no results page", html: `<html><body><div class="no-results">No results.</div></body></html>`},
		{name: "empty", html: ``},
		{name: "garbage", html: `<<<>>>&&& <a class=result__a href=`},
		{
			name: "link outside a result block",
			html: `<a class="result__a" href="https://lonely.example/">Lonely</a><a class="result__snippet">not mine</a>`,
			want: []Result{{Type: TypePage, Title: "Lonely", URL: "https://lonely.example/"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDDG(strings.NewReader(tc.html))
			if err != nil {
				t.Fatalf("parseDDG: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestUnwrapDDGLink(t *testing.T) {
	tests := []struct {
		href string
		want string
		ok   bool
	}{
		{"//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fp&rut=1", "https://a.example/p", true},
		{"https://duckduckgo.com/l/?uddg=http%3A%2F%2Fb.example", "http://b.example", true},
		{"https://html.duckduckgo.com/l/?uddg=https%3A%2F%2Fc.example", "https://c.example", true},
		{"/l/?uddg=https%3A%2F%2Fd.example", "https://d.example", true},
		{" https://plain.example/x ", "https://plain.example/x", true},
		{"//duckduckgo.com/l/?rut=1", "", false},
		{"//duckduckgo.com/y.js?u3=https%3A%2F%2Fad.example", "", false},
		{"//duckduckgo.com/l/?uddg=%2Frelative", "", false},
		{"mailto:x@example.com", "", false},
		{"", "", false},
		{"%zz", "", false},
	}
	for _, tc := range tests {
		got, ok := unwrapDDGLink(tc.href)
		if got != tc.want || ok != tc.ok {
			t.Errorf("unwrapDDGLink(%q) = %q, %v; want %q, %v", tc.href, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDuckDuckGoChallengePage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/html/" || r.Method != http.MethodPost || r.Header.Get("User-Agent") == "" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		if _, err := w.Write([]byte(`<html><body><div class="anomaly-modal">Unfortunately, bots use DuckDuckGo too.</div></body></html>`)); err != nil {
			t.Errorf("write: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	e, err := NewDuckDuckGo(DuckDuckGoConfig{BaseURL: srv.URL, Region: "us-en"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Search(t.Context(), "q", 5)
	se, ok := err.(*StatusError)
	if !ok || se.StatusCode != http.StatusAccepted {
		t.Fatalf("err = %v, want 202 StatusError", err)
	}
}

func FuzzParseDDG(f *testing.F) {
	f.Add(ddgSample)
	f.Add(`<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fx.example">x</a></div>`)
	f.Add(`<a class="result__a" href="//duckduckgo.com/l/?uddg=%">`)
	f.Add("")
	f.Fuzz(func(t *testing.T, doc string) {
		results, err := parseDDG(strings.NewReader(doc))
		if err != nil {
			return
		}
		for _, r := range results {
			if r.Type != TypePage {
				t.Fatalf("unexpected type %q", r.Type)
			}
			if _, ok := canonicalURL(r.URL); !ok {
				t.Fatalf("unusable URL %q", r.URL)
			}
			if r.Title != strings.TrimSpace(r.Title) || strings.Contains(r.Title, "  ") {
				t.Fatalf("title not collapsed: %q", r.Title)
			}
			if utf8.ValidString(doc) && !utf8.ValidString(r.Title+r.Content) {
				t.Fatalf("invalid UTF-8 from valid input")
			}
		}
		// Normalize must accept whatever the parser yields.
		for _, r := range Normalize(results, 3) {
			if _, ok := canonicalURL(r.URL); !ok {
				t.Fatalf("Normalize kept unusable URL %q", r.URL)
			}
		}
	})
}
