package search

import "testing"

func TestStripHTML(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain  text\n", "plain text"},
		{"<strong>bold</strong> and <em>em</em>", "bold and em"},
		{"Tom &amp; Jerry &lt;3 &quot;q&quot; &#39;s&#39;", `Tom & Jerry <3 "q" 's'`},
		{`<span class="searchmatch">Go</span> (language)`, "Go (language)"},
		{"a<script>alert(1)</script>b<style>x{}</style>c", "abc"},
		{"unclosed <b>tag", "unclosed tag"},
		{"broken <", "broken <"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := stripHTML(tc.in); got != tc.want {
			t.Errorf("stripHTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
