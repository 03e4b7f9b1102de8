package search

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// stripHTML returns the text of an HTML fragment (as found in Brave
// descriptions and Wikipedia snippets) with entities decoded and whitespace
// collapsed. Script and style contents are dropped.
func stripHTML(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return collapseSpace(s)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			// io.EOF or a malformed tail; either way what we have is the text.
			return collapseSpace(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			if name, _ := z.TagName(); isRawTextTag(name) {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); isRawTextTag(name) && skip > 0 {
				skip--
			}
		}
	}
}

func isRawTextTag(name []byte) bool {
	return string(name) == "script" || string(name) == "style"
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncateRunes cuts s to at most n runes, marking the cut with an ellipsis.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		count++
	}
	return s
}
