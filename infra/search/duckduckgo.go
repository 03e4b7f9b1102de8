package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

const defaultDDGBaseURL = "https://html.duckduckgo.com"

// DuckDuckGoConfig configures the key-less DuckDuckGo HTML engine.
type DuckDuckGoConfig struct {
	BaseURL string // default https://html.duckduckgo.com
	// Region is DuckDuckGo's kl parameter (e.g. "us-en"); empty lets it choose.
	Region     string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// DuckDuckGo scrapes DuckDuckGo's no-JavaScript results page.
type DuckDuckGo struct {
	base   string
	region string
	req    requester
}

// NewDuckDuckGo validates cfg and returns a DuckDuckGo engine.
func NewDuckDuckGo(cfg DuckDuckGoConfig) (*DuckDuckGo, error) {
	base, err := parseBaseURL(EngineDuckDuckGo, cfg.BaseURL, defaultDDGBaseURL)
	if err != nil {
		return nil, err
	}
	return &DuckDuckGo{
		base:   base,
		region: strings.TrimSpace(cfg.Region),
		req:    newRequester(EngineDuckDuckGo, cfg.HTTPClient, cfg.Timeout, ""),
	}, nil
}

// Name implements Engine.
func (d *DuckDuckGo) Name() string { return EngineDuckDuckGo }

// Search implements Engine.
func (d *DuckDuckGo) Search(ctx context.Context, query string, max int) ([]Result, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, fmt.Errorf("%s: %w", EngineDuckDuckGo, ErrEmptyQuery)
	}
	max = effectiveMax(max)
	form := url.Values{"q": {query}}
	if d.region != "" {
		form.Set("kl", d.region)
	}
	encoded := form.Encode()
	status, body, err := d.req.do(ctx, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/html/", strings.NewReader(encoded))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "text/html")
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	// DuckDuckGo answers throttled clients with 202 and a challenge page.
	if status != http.StatusOK {
		return nil, &StatusError{Engine: EngineDuckDuckGo, StatusCode: status, Body: "challenge page instead of results (rate limited)"}
	}
	results, err := parseDDG(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EngineDuckDuckGo, err)
	}
	return Normalize(results, max), nil
}

// parseDDG extracts organic results from a DuckDuckGo HTML results page.
// Each result has an a.result__a (title and redirect link) and optionally a
// .result__snippet in the same .result container; ads are skipped.
func parseDDG(r io.Reader) ([]Result, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	var out []Result
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.DataAtom != atom.A || !hasClass(n, "result__a") {
			continue
		}
		container := resultContainer(n)
		if container != nil && hasClass(container, "result--ad") {
			continue
		}
		link, ok := unwrapDDGLink(attr(n, "href"))
		if !ok {
			continue
		}
		res := Result{Type: TypePage, Title: textOf(n), URL: link}
		if container != nil {
			if snip := findClass(container, "result__snippet"); snip != nil {
				res.Content = textOf(snip)
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// resultContainer returns the nearest ancestor with class "result", the
// block that groups a result's title, URL and snippet.
func resultContainer(n *html.Node) *html.Node {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && hasClass(p, "result") {
			return p
		}
	}
	return nil
}

func findClass(root *html.Node, class string) *html.Node {
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && hasClass(n, class) {
			return n
		}
	}
	return nil
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

// textOf concatenates the text below n with whitespace collapsed, so
// highlighted terms (<b>) read naturally.
func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// unwrapDDGLink turns DuckDuckGo's click-tracking redirect
// (//duckduckgo.com/l/?uddg=<escaped target>) into the target URL. Direct
// http(s) links pass through; anything else (ads, relative links) is rejected.
func unwrapDDGLink(href string) (string, bool) {
	href = strings.TrimSpace(href)
	if strings.HasPrefix(href, "//") {
		href = "https:" + href
	}
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	isDDG := host == "" || host == "duckduckgo.com" || strings.HasSuffix(host, ".duckduckgo.com")
	if isDDG {
		if u.Path != "/l/" && u.Path != "/l" {
			return "", false
		}
		target := u.Query().Get("uddg")
		if target == "" {
			return "", false
		}
		t, err := url.Parse(target)
		if err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" {
			return "", false
		}
		return target, true
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	return href, true
}
