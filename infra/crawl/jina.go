package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// jinaBase validates the reader endpoint and strips trailing slashes.
func jinaBase(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = DefaultJinaBaseURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: JinaBaseURL %q: %w", ErrBadOptions, raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: JinaBaseURL %q: need http(s)://host[/path]", ErrBadOptions, raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// vetTarget applies the SSRF policy to a URL that someone else will fetch:
// the host must resolve to public addresses only. Jina fetches from its own
// network, but handing it internal names would still leak them and defeat
// the operator's choice of CRAWL_ALLOW_PRIVATE=false.
func (c *Crawler) vetTarget(ctx context.Context, u *url.URL) error {
	if c.opts.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = c.dialer.lookup(ctx, host)
		if err != nil {
			return fmt.Errorf("crawl: resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return fmt.Errorf("crawl: resolve %s: no addresses", host)
		}
	}
	for _, ip := range ips {
		if err := checkIP(ip, false); err != nil {
			return fmt.Errorf("host %s: %w", host, err)
		}
	}
	return nil
}

// jinaReply is the reader's JSON answer (Accept: application/json).
type jinaReply struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    *struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"data"`
}

func (c *Crawler) fetchJina(ctx context.Context, rawURL string, u *url.URL) (*Page, error) {
	if c.jinaErr != nil {
		return nil, c.jinaErr
	}
	if err := c.vetTarget(ctx, u); err != nil {
		return nil, err
	}
	// The target goes into the path verbatim, as the reader expects
	// (https://r.jina.ai/https://example.com/a?b=c).
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.jinaBase+"/"+u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("crawl: build reader request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if key := strings.TrimSpace(c.opts.JinaAPIKey); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.jina.Do(req)
	if err != nil {
		return nil, fmt.Errorf("crawl: reader fetch %s: %w", u.Redacted(), err)
	}
	defer func() {
		if cerr := resp.Body.Close(); cerr != nil {
			slog.DebugContext(ctx, "crawl: close reader body", "url", u.Redacted(), "err", cerr)
		}
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: u.Redacted() + " (via reader)", Code: resp.StatusCode, Status: http.StatusText(resp.StatusCode)}
	}
	body, cut, err := readCapped(resp.Body, c.opts.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("crawl: read reader response for %s: %w", u.Redacted(), err)
	}

	page := &Page{URL: rawURL, FinalURL: u.String(), ContentType: "text/markdown", Truncated: cut}
	isJSON := classify(mediaType(resp.Header.Get("Content-Type"))) == kindJSON
	if isJSON && cut {
		return nil, fmt.Errorf("%w: reader response for %s exceeds %d bytes", ErrTooLarge, u.Redacted(), c.opts.MaxBytes)
	}
	if isJSON {
		var reply jinaReply
		if err := json.Unmarshal(body, &reply); err != nil {
			return nil, fmt.Errorf("crawl: decode reader response for %s: %w", u.Redacted(), err)
		}
		if (reply.Code != 0 && (reply.Code < 200 || reply.Code > 299)) || reply.Data == nil {
			return nil, fmt.Errorf("crawl: reader failed for %s: code %d: %s", u.Redacted(), reply.Code, collapseSpaces(reply.Message))
		}
		page.Title = collapseSpaces(reply.Data.Title)
		page.Markdown = strings.TrimSpace(reply.Data.Content)
		if reply.Data.URL != "" {
			page.FinalURL = reply.Data.URL
		}
	} else {
		// Plain-text answers are markdown preceded by the reader's header
		// lines; a cut one is still useful, unlike cut JSON.
		page.Title, page.FinalURL, page.Markdown = parseJinaText(strings.ToValidUTF8(string(body), "\uFFFD"), page.FinalURL)
	}
	slog.DebugContext(ctx, "crawl: fetched via reader", "url", u.Redacted(), "bytes", len(body), "truncated", page.Truncated)
	return page, nil
}

// parseJinaText splits the reader's text format:
//
//	Title: …
//	URL Source: …
//	Markdown Content:
//	…
//
// Anything not in that shape is returned whole as the content.
func parseJinaText(s, fallbackURL string) (title, finalURL, content string) {
	finalURL = fallbackURL
	rest := s
	for {
		line, after, found := strings.Cut(rest, "\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "Title:"):
			title = collapseSpaces(strings.TrimPrefix(trimmed, "Title:"))
		case strings.HasPrefix(trimmed, "URL Source:"):
			if v := strings.TrimSpace(strings.TrimPrefix(trimmed, "URL Source:")); v != "" {
				finalURL = v
			}
		case strings.HasPrefix(trimmed, "Published Time:"), strings.HasPrefix(trimmed, "Warning:"):
		case trimmed == "Markdown Content:":
			return title, finalURL, strings.TrimSpace(after)
		default:
			return title, finalURL, strings.TrimSpace(s)
		}
		if !found {
			return title, finalURL, strings.TrimSpace(s)
		}
		rest = after
	}
}
