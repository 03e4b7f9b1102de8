package search

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestWikipediaAgainstFake(t *testing.T) {
	fake := testkit.NewSearchAll(t)
	fake.Add("einstein",
		testkit.SearchHit{Title: "Albert Einstein", Content: "Albert Einstein was a German-born theoretical physicist & <philosopher>."},
		testkit.SearchHit{Title: "Einstein field equations", Content: "In general relativity, the Einstein field equations relate geometry to matter."},
		testkit.SearchHit{Title: "Einstein–Szilard letter", Content: "A letter written in 1939."},
		testkit.SearchHit{Title: "Albert Einstein", Content: "duplicate title"},
	)
	fake.Add("nothing here")
	e, err := New(Options{Engine: EngineWikipedia, WikipediaBaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		query string
		max   int
		want  []Result
	}{
		{
			name: "snippets stripped, titles linked", query: "einstein", max: 5,
			want: []Result{
				{Type: TypePage, Title: "Albert Einstein", URL: "https://en.wikipedia.org/wiki/Albert_Einstein",
					Content: "Albert Einstein was a German-born theoretical physicist & <philosopher>."},
				{Type: TypePage, Title: "Einstein field equations", URL: "https://en.wikipedia.org/wiki/Einstein_field_equations",
					Content: "In general relativity, the Einstein field equations relate geometry to matter."},
				{Type: TypePage, Title: "Einstein–Szilard letter", URL: "https://en.wikipedia.org/wiki/Einstein%E2%80%93Szilard_letter",
					Content: "A letter written in 1939."},
			},
		},
		{
			name: "limit", query: "einstein", max: 1,
			want: []Result{{Type: TypePage, Title: "Albert Einstein", URL: "https://en.wikipedia.org/wiki/Albert_Einstein",
				Content: "Albert Einstein was a German-born theoretical physicist & <philosopher>."}},
		},
		{name: "no results", query: "nothing here", max: 5, want: []Result{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Search(t.Context(), tc.query, tc.max)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
	if _, err := e.Search(t.Context(), " ", 5); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("blank query: %v", err)
	}
}

func TestWikipediaRequestAndErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr error
		want    int
	}{
		{name: "results", status: 200, body: `{"batchcomplete":"","query":{"searchinfo":{"totalhits":1},"search":[{"ns":0,"title":"Go (programming language)","snippet":"<span class=\"searchmatch\">Go</span> is"}]}}`, want: 1},
		{name: "api error in a 200", status: 200, body: `{"error":{"code":"badvalue","info":"Unrecognized value"}}`, wantErr: ErrBackend},
		{name: "no query section", status: 200, body: `{"batchcomplete":""}`},
		{name: "html instead of json", status: 200, body: `<!doctype html><p>maintenance</p>`, wantErr: errAny},
		{name: "http error", status: 403, body: `forbidden`, wantErr: errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCaptureServer(t, tc.status, "application/json", tc.body)
			e, err := NewWikipedia(WikipediaConfig{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Search(t.Context(), "golang", 80)
			path, q, _ := srv.last(t)
			if path != "/w/api.php" {
				t.Errorf("path = %q", path)
			}
			for k, v := range map[string]string{"action": "query", "list": "search", "srsearch": "golang", "format": "json", "srlimit": "50"} {
				if q.Get(k) != v {
					t.Errorf("param %s = %q, want %q", k, q.Get(k), v)
				}
			}
			switch {
			case tc.wantErr == errAny:
				if err == nil {
					t.Fatal("want error")
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "badvalue") {
					t.Fatalf("err = %v, want %v with the API code", err, tc.wantErr)
				}
			default:
				if err != nil || len(got) != tc.want {
					t.Fatalf("got %d results, %v; want %d", len(got), err, tc.want)
				}
			}
			if tc.want == 1 && (got[0].Content != "Go is" || got[0].URL != "https://en.wikipedia.org/wiki/Go_(programming_language)") {
				t.Errorf("result = %+v", got[0])
			}
		})
	}
}

// errAny marks table rows that expect some error, whatever its kind.
var errAny = errors.New("any error")

func TestWikipediaLanguage(t *testing.T) {
	tests := []struct {
		base, lang string
		want       string
		wantErr    bool
	}{
		{base: "", want: "https://en.wikipedia.org/wiki/X"},
		{base: "https://de.wikipedia.org", want: "https://de.wikipedia.org/wiki/X"},
		{base: "https://zh-yue.m.wikipedia.org/", want: "https://zh-yue.wikipedia.org/wiki/X"},
		{base: "https://www.wikipedia.org", want: "https://en.wikipedia.org/wiki/X"},
		{base: "http://127.0.0.1:9", want: "https://en.wikipedia.org/wiki/X"},
		{base: "http://127.0.0.1:9", lang: "FR", want: "https://fr.wikipedia.org/wiki/X"},
		{base: "http://127.0.0.1:9", lang: "evil.com/x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.base+"/"+tc.lang, func(t *testing.T) {
			e, err := NewWikipedia(WikipediaConfig{BaseURL: tc.base, Lang: tc.lang})
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := wikiPageURL(e.lang, "X"); got != tc.want {
				t.Errorf("page URL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWikiPageURL(t *testing.T) {
	tests := []struct{ title, want string }{
		{"Albert Einstein", "https://en.wikipedia.org/wiki/Albert_Einstein"},
		{"AC/DC", "https://en.wikipedia.org/wiki/AC/DC"},
		{"What? #1 100%", "https://en.wikipedia.org/wiki/What%3F_%231_100%25"},
		{"Zürich", "https://en.wikipedia.org/wiki/Z%C3%BCrich"},
	}
	for _, tc := range tests {
		if got := wikiPageURL("en", tc.title); got != tc.want {
			t.Errorf("wikiPageURL(%q) = %q, want %q", tc.title, got, tc.want)
		}
		if _, ok := canonicalURL(wikiPageURL("en", tc.title)); !ok {
			t.Errorf("URL for %q does not parse", tc.title)
		}
	}
}

func TestFakeWikipediaHonoursFailures(t *testing.T) {
	fake := testkit.NewSearchAll(t)
	fake.FailNext(2, http.StatusServiceUnavailable)
	e, err := New(Options{Engine: EngineWikipedia, WikipediaBaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	fastRetry(t, e)
	var se *StatusError
	if _, err := e.Search(t.Context(), "q", 3); !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want 503", err)
	}
}
