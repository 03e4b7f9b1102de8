package graph

import (
	"encoding/json"
	"net/url"
	"strings"

	dm "github.com/deer-go/deer-go/biz/model"
)

func domainOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
}

func searchCitation(title, link, content string, score float64) dm.Citation {
	return dm.Citation{
		URL: link, Title: strings.TrimSpace(title), Description: truncate(strings.TrimSpace(content), 300),
		ContentSnippet: truncate(strings.TrimSpace(content), 500), RelevanceScore: score, Domain: domainOf(link),
		SourceType: "web_search",
	}
}

// citationsFromTool extracts the sources in a tool result: web_search's JSON array of pages and crawl_tool's
// {url, title, crawled_content}. Other tools contribute nothing; a result that does not parse contributes nothing.
func citationsFromTool(toolName, result string) []dm.Citation {
	switch toolName {
	case "web_search":
		var items []struct {
			Type    string  `json:"type"`
			Title   string  `json:"title"`
			URL     string  `json:"url"`
			Content string  `json:"content"`
			Score   float64 `json:"score"`
		}
		if json.Unmarshal([]byte(result), &items) != nil {
			return nil
		}
		var out []dm.Citation
		for _, it := range items {
			if (it.Type == "" || it.Type == "page") && validURL(it.URL) {
				out = append(out, searchCitation(it.Title, it.URL, it.Content, it.Score))
			}
		}
		return out
	case "crawl_tool":
		var page struct {
			URL     string `json:"url"`
			Title   string `json:"title"`
			Content string `json:"crawled_content"`
		}
		if json.Unmarshal([]byte(result), &page) != nil || !validURL(page.URL) {
			return nil
		}
		title := page.Title
		if title == "" {
			title = domainOf(page.URL)
		}
		return []dm.Citation{{
			URL: page.URL, Title: title, Description: truncate(strings.TrimSpace(page.Content), 300),
			ContentSnippet: truncate(strings.TrimSpace(page.Content), 500), Domain: domainOf(page.URL), SourceType: "crawl",
		}}
	}
	return nil
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// mergeCitations adds new sources by URL. A URL seen again with a higher score takes the better title,
// description and score; a crawl of a searched page keeps the search entry and gains nothing but its content.
func mergeCitations(have, add []dm.Citation) []dm.Citation {
	idx := make(map[string]int, len(have))
	for i, c := range have {
		idx[normURL(c.URL)] = i
	}
	for _, c := range add {
		k := normURL(c.URL)
		i, ok := idx[k]
		if !ok {
			idx[k] = len(have)
			have = append(have, c)
			continue
		}
		old := &have[i]
		if c.RelevanceScore > old.RelevanceScore {
			old.RelevanceScore = c.RelevanceScore
			if c.Title != "" {
				old.Title = c.Title
			}
			if c.Description != "" {
				old.Description = c.Description
			}
		}
		if old.Title == "" {
			old.Title = c.Title
		}
		if old.ContentSnippet == "" {
			old.ContentSnippet = c.ContentSnippet
		}
	}
	return have
}

func normURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return s
	}
	u.Fragment = ""
	u.Host = strings.ToLower(u.Host)
	u.Scheme = strings.ToLower(u.Scheme)
	return strings.TrimSuffix(u.String(), "/")
}
