package search

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deer-go/deer-go/internal/testkit"
)

func TestArxivAgainstFake(t *testing.T) {
	fake := testkit.NewSearchAll(t)
	fake.Add("attention",
		testkit.SearchHit{Title: "Attention Is All You Need: a very long title that the feed wraps over several lines",
			URL: "http://arxiv.org/abs/1706.03762v7", Content: "The dominant sequence transduction models are based on complex recurrent or convolutional neural networks."},
		testkit.SearchHit{Title: "Duplicate", URL: "http://arxiv.org/abs/1706.03762v7", Content: "same paper"},
	)
	fake.Add("nothing")
	e, err := New(Options{Engine: EngineArxiv, ArxivBaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Search(t.Context(), "attention  transformers", 5)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	want := []Result{{
		Type:    TypePage,
		Title:   "Attention Is All You Need: a very long title that the feed wraps over several lines",
		URL:     "http://arxiv.org/abs/1706.03762v7",
		Content: "The dominant sequence transduction models are based on complex recurrent or convolutional neural networks.",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	if q := fake.Queries(); len(q) != 1 || q[0] != "attention transformers" {
		t.Errorf("fake saw %q", q)
	}
	none, err := e.Search(t.Context(), "nothing", 5)
	if err != nil || len(none) != 0 || none == nil {
		t.Errorf("empty feed: %#v, %v", none, err)
	}
}

func TestArxivRequestShape(t *testing.T) {
	srv := newCaptureServer(t, http.StatusOK, "application/atom+xml", `<feed xmlns="http://www.w3.org/2005/Atom"></feed>`)
	e, err := NewArxiv(ArxivConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Search(t.Context(), "quantum error correction", 500); err != nil {
		t.Fatal(err)
	}
	path, q, _ := srv.last(t)
	if path != "/api/query" || q.Get("search_query") != "all:quantum error correction" || q.Get("max_results") != "50" {
		t.Errorf("request = %s %v", path, q)
	}
}

const arxivErrorFeed = `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234</id>
    <title>Error</title>
    <summary>incorrect id format for 1234</summary>
  </entry>
</feed>`

const arxivTwoEntries = `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/2101.00001v2</id>
    <title>Graphs &amp;
      Networks</title>
    <summary>  We study &lt;things&gt;.
  Second line.
</summary>
    <link href="http://arxiv.org/abs/2101.00001v2" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/2101.00001v2" rel="related" type="application/pdf"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2101.00002v1</id>
    <title>No links</title>
    <summary>Only an id.</summary>
  </entry>
</feed>`

func TestParseArxiv(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []Result
		wantErr error
	}{
		{
			name: "entries", body: arxivTwoEntries,
			want: []Result{
				{Type: TypePage, Title: "Graphs & Networks", URL: "http://arxiv.org/abs/2101.00001v2", Content: "We study <things>. Second line."},
				{Type: TypePage, Title: "No links", URL: "http://arxiv.org/abs/2101.00002v1", Content: "Only an id."},
			},
		},
		{name: "empty feed", body: `<feed xmlns="http://www.w3.org/2005/Atom"><title>q</title></feed>`, want: []Result{}},
		{name: "error entry", body: arxivErrorFeed, wantErr: ErrBackend},
		{name: "not a feed", body: `<html><body>rate limited</body></html>`, wantErr: errAny},
		{name: "truncated", body: arxivTwoEntries[:200], wantErr: errAny},
		{name: "json", body: `{"entries":[]}`, wantErr: errAny},
		{name: "empty body", body: ``, wantErr: errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArxiv([]byte(tc.body))
			switch {
			case tc.wantErr == errAny:
				if err == nil {
					t.Fatalf("want error, got %#v", got)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "incorrect id format") {
					t.Fatalf("err = %v, want %v with the message", err, tc.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %#v\nwant %#v", got, tc.want)
				}
			}
		})
	}
}

func TestArxivBadRequestFeed(t *testing.T) {
	srv := newCaptureServer(t, http.StatusBadRequest, "application/atom+xml", arxivErrorFeed)
	e, err := NewArxiv(ArxivConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var se *StatusError
	if _, err := e.Search(t.Context(), "x", 3); !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want 400 StatusError", err)
	}
}

func FuzzParseArxiv(f *testing.F) {
	f.Add([]byte(arxivTwoEntries))
	f.Add([]byte(arxivErrorFeed))
	f.Add([]byte(`<feed><entry><id> </id><link rel="alternate" href=""/></entry></feed>`))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><feed/>`))
	f.Add([]byte(`<feed><entry><title><![CDATA[a <b> c]]></title></entry></feed>`))
	f.Add([]byte(`<!DOCTYPE feed [<!ENTITY x "y">]><feed>&x;</feed>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseArxiv(data)
		if err != nil {
			if got != nil {
				t.Fatalf("results %v returned with error %v", got, err)
			}
			return
		}
		if got == nil {
			t.Fatal("nil results without error")
		}
		for _, r := range got {
			if r.Type != TypePage {
				t.Errorf("type %q", r.Type)
			}
			for _, s := range []string{r.Title, r.Content} {
				if strings.ContainsAny(s, "\n\t") || s != strings.TrimSpace(s) {
					t.Errorf("whitespace not collapsed: %q", s)
				}
				if !utf8.ValidString(s) {
					t.Errorf("invalid UTF-8: %q", s)
				}
			}
		}
		// Whatever the feed holds, normalisation must cope with it.
		for _, r := range Normalize(got, 0) {
			if _, ok := canonicalURL(r.URL); !ok {
				t.Errorf("Normalize kept unusable URL %q", r.URL)
			}
		}
	})
}
