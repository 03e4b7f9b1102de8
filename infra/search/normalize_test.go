package search

import (
	"reflect"
	"testing"
)

func TestNormalize(t *testing.T) {
	page := func(title, u string) Result { return Result{Type: TypePage, Title: title, URL: u} }
	img := func(u, d string) Result { return Result{Type: TypeImage, ImageURL: u, ImageDescription: d} }

	tests := []struct {
		name string
		in   []Result
		max  int
		want []Result
	}{
		{name: "nil input", in: nil, max: 5, want: []Result{}},
		{
			name: "trims and defaults type",
			in:   []Result{{Title: "  A \n", URL: " https://a.example/x ", Content: "\tbody  ", Score: 0.5}},
			max:  5,
			want: []Result{{Type: TypePage, Title: "A", URL: "https://a.example/x", Content: "body", Score: 0.5}},
		},
		{
			name: "drops pages without usable URL",
			in: []Result{page("empty", ""), page("blank", "   "), page("relative", "/x"),
				page("js", "javascript:alert(1)"), page("ok", "http://ok.example")},
			max:  5,
			want: []Result{page("ok", "http://ok.example")},
		},
		{
			name: "dedupes by normalised URL keeping first",
			in: []Result{page("1", "https://Example.com/a/"), page("2", "HTTPS://example.COM/a#frag"),
				page("3", "https://example.com/a"), page("4", "https://example.com/a?x=1"), page("5", "http://example.com/a")},
			max:  10,
			want: []Result{page("1", "https://Example.com/a/"), page("4", "https://example.com/a?x=1"), page("5", "http://example.com/a")},
		},
		{
			name: "path case matters",
			in:   []Result{page("1", "https://e.example/A"), page("2", "https://e.example/a")},
			max:  10,
			want: []Result{page("1", "https://e.example/A"), page("2", "https://e.example/a")},
		},
		{
			name: "caps pages and images separately, images last",
			in: []Result{img("https://i.example/1.png", " one "), page("a", "https://a.example"), img("https://i.example/2.png", ""),
				page("b", "https://b.example"), page("c", "https://c.example"), img("https://i.example/3.png", "")},
			max: 2,
			want: []Result{page("a", "https://a.example"), page("b", "https://b.example"),
				img("https://i.example/1.png", "one"), img("https://i.example/2.png", "")},
		},
		{
			name: "duplicates do not use up the cap",
			in:   []Result{page("a", "https://a.example"), page("a2", "https://a.example/"), page("b", "https://b.example")},
			max:  2,
			want: []Result{page("a", "https://a.example"), page("b", "https://b.example")},
		},
		{
			name: "non-positive max means unlimited",
			in:   []Result{page("a", "https://a.example"), page("b", "https://b.example"), page("c", "https://c.example")},
			max:  0,
			want: []Result{page("a", "https://a.example"), page("b", "https://b.example"), page("c", "https://c.example")},
		},
		{
			name: "image and page with same URL both kept; foreign fields cleared",
			in: []Result{
				{Type: "IMAGE", ImageURL: "https://x.example/p.png", Title: "stray", URL: "https://x.example/p.png", Score: 1},
				{Type: TypePage, URL: "https://x.example/p.png", ImageURL: "https://stray.example/i.png"},
				{Type: TypeImage, ImageURL: "data:image/png;base64,AAAA"},
				{Type: "video", URL: "https://v.example"},
			},
			max:  5,
			want: []Result{{Type: TypePage, URL: "https://x.example/p.png"}, img("https://x.example/p.png", "")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Normalize(tc.in, tc.max)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Normalize() =\n%+v\nwant\n%+v", got, tc.want)
			}
			if again := Normalize(got, tc.max); !reflect.DeepEqual(again, got) {
				t.Errorf("Normalize is not idempotent:\n%+v\n%+v", again, got)
			}
		})
	}
}
